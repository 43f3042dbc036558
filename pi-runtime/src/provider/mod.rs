//! Model providers: one folder per wire API (wire types, request conversion, stream
//! parsing), plus the faux model used by tests and examples.
