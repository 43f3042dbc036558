//! The conformance runner: JSON Lines requests on stdin, one answer per line on stdout
//! (`../shared/conformance/PROTOCOL.md`). It never exits early and never panics on input.

mod bench;
mod ops;
mod protocol;
mod seed;

use std::io::{self, BufRead, Write};

// The agent loop and the JSON values it passes around allocate many small objects; the
// reference runs on V8's bump allocator. mimalloc keeps the comparison about our code rather
// than glibc's malloc (measured: allocation was ~40% of a scenario run under glibc).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> io::Result<()> {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("conformance: cannot start the async runtime: {error}");
            return Err(error);
        }
    };
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    for line in stdin.lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = protocol::answer_line(&line, runtime.handle());
        writeln!(out, "{answer}")?;
        out.flush()?;
    }
    Ok(())
}
