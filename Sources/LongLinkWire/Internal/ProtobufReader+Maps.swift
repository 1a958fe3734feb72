extension ProtobufReader {
    /// Reads one `map<string, string>` entry (key field 1, value field 2, each "" when absent) and
    /// stores it in `map`; a repeated key keeps the last value. `bytes` counts the key and value
    /// bytes of every entry read into `map` (repeated keys included: each was read).
    mutating func readStringMapEntry(
        _ tag: FieldTag, into map: inout [String: String], bytes: inout Int, field: String
    ) throws(WireFormatError) {
        // Counted in distinct keys: a repeated key replaces its entry and holds nothing more.
        guard map.count < limits.maxMapEntries else {
            throw WireFormatError(.tooManyElements(limit: limits.maxMapEntries), field: field, offset: tag.offset)
        }
        var entry = try readMessageField(tag, field: field)
        var key = ""
        var value = ""
        while let entryTag = try entry.readTag(in: field) {
            switch entryTag.fieldNumber {
            // The paths of key and value are built only when there is an error to report.
            case 1:
                do throws(WireFormatError) {
                    key = try entry.readStringField(entryTag, field: field)
                } catch {
                    throw WireFormatError(error.kind, field: field + ".key", offset: error.offset)
                }
            case 2:
                do throws(WireFormatError) {
                    value = try entry.readStringField(entryTag, field: field)
                } catch {
                    throw WireFormatError(error.kind, field: field + ".value", offset: error.offset)
                }
            default: try entry.skipField(entryTag, in: field)
            }
        }
        bytes += key.utf8.count + value.utf8.count
        guard bytes <= limits.maxMapBytes else {
            throw WireFormatError(.tooManyElements(limit: limits.maxMapBytes), field: field, offset: tag.offset)
        }
        map[key] = value
    }
}
