#!/usr/bin/env python3
"""Qualifies symbol links in the LongLink and LongLinkWire symbol graphs for a multi-module DocC archive.

LongLink re-exports a few declarations of LongLinkCore, LongLinkWire and LongLinkTransport (Exports.swift), so
its doc comments name those types unqualified (``LongLinkError``), as Swift code does; so do LongLinkWire's
for LongLinkCore's. In an archive holding LongLink, LongLinkWire and LongLinkCore as modules, DocC resolves such
a link inside the commenting module only and reports it as missing. This rewrites, in the copied graphs only
(never the sources):

- ``Name/...`` where Name is a top-level symbol of LongLinkCore or LongLinkWire (and not of the commenting
  module) into ``LongLinkCore/Name/...`` or ``LongLinkWire/Name/...``;
- ``Name/...`` where Name is a top-level symbol of LongLinkTransport, which the archive does not
  document, into code voice: `Name.member`.

Usage: qualify-doc-links.py GRAPH_DIR ALL_GRAPHS_DIR   (prints how many links it rewrote)
"""
import glob
import json
import os
import re
import sys


def top_level_names(path):
    if not os.path.exists(path):
        return set()
    with open(path) as file:
        graph = json.load(file)
    return {symbol["pathComponents"][0] for symbol in graph["symbols"] if symbol.get("pathComponents")}


def main():
    work, all_graphs = sys.argv[1], sys.argv[2]
    own = top_level_names(os.path.join(work, "LongLink.symbols.json"))
    core = top_level_names(os.path.join(work, "LongLinkCore.symbols.json")) - own
    wire = top_level_names(os.path.join(work, "LongLinkWire.symbols.json")) - own - core
    transport = top_level_names(os.path.join(all_graphs, "LongLinkTransport.symbols.json")) - own - wire - core
    link = re.compile(r"``([A-Za-z_][A-Za-z0-9_]*)((?:/[^`]*)?)``")
    rewritten = 0

    def replace(match):
        nonlocal rewritten
        name, rest = match.group(1), match.group(2)
        if name in core:
            rewritten += 1
            return "``LongLinkCore/" + name + rest + "``"
        if name in wire:
            rewritten += 1
            return "``LongLinkWire/" + name + rest + "``"
        if name in transport:
            rewritten += 1
            members = [re.sub(r"-[A-Za-z0-9_.]+$", "", part) for part in rest.split("/") if part]
            return "`" + ".".join([name] + members) + "`"
        return match.group(0)

    graphs = [os.path.join(work, "LongLink.symbols.json"), os.path.join(work, "LongLinkWire.symbols.json")]
    graphs += glob.glob(os.path.join(work, "LongLink@*.symbols.json"))
    graphs += glob.glob(os.path.join(work, "LongLinkWire@*.symbols.json"))
    for path in [path for path in graphs if os.path.exists(path)]:
        with open(path) as file:
            graph = json.load(file)
        for symbol in graph["symbols"]:
            for line in (symbol.get("docComment") or {}).get("lines", []):
                line["text"] = link.sub(replace, line["text"])
        with open(path, "w") as file:
            json.dump(graph, file)
    print(f"qualify-doc-links: rewrote {rewritten} links to re-exported symbols in LongLink's and LongLinkWire's graphs")


if __name__ == "__main__":
    main()
