//! The client: build the request, send it, parse the stream.
