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
    // One thread, as the reference's event loop: a scenario's tools then run on the thread
    // that drives the agent, and no timing includes waking another thread.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => std::sync::Arc::new(runtime),
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
        let answer = protocol::answer_line(&line, &runtime);
        writeln!(out, "{answer}")?;
        out.flush()?;
    }
    Ok(())
}
