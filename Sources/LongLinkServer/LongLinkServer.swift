// The LongLinkServer module. Its types live in files of their own.
