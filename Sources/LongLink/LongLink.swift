// The LongLink module. Its types live in files of their own.
