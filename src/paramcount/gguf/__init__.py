"""Every GGUF fact in one place: the file reader, its metadata, llama.cpp's converter layouts and
name map, the quantiser's type rules, and the KV layout a file implies."""
