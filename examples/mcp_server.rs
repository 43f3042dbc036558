//! The built-in `read`, `write`, `edit` and `bash` tools and one custom `#[tool]` served to any
//! MCP client, with the same validation and error texts a model gets in the agent loop.
//!
//! ```text
//! cargo run --example mcp_server                               # stdio (what desktop clients start)
//! cargo run --example mcp_server -- --http 127.0.0.1:8000      # streamable HTTP at /mcp
//! cargo run --example mcp_server -- --dir /path/to/project     # the tools' working directory
//! ```
//!
//! Claude Desktop (`claude_desktop_config.json`) starts it over stdio:
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "pi-tools": {
//!       "command": "/path/to/target/release/examples/mcp_server",
//!       "args": ["--dir", "/path/to/project"]
//!     }
//!   }
//! }
//! ```
//!
//! Codex (`~/.codex/config.toml`):
//!
//! ```toml
//! [mcp_servers.pi-tools]
//! command = "/path/to/target/release/examples/mcp_server"
//! args = ["--dir", "/path/to/project"]
//! ```
//!
//! Over HTTP, a client that takes a URL (Claude Code: `claude mcp add --transport http pi-tools
//! http://127.0.0.1:8000/mcp`) connects to `http://<addr>/mcp`. A loopback address accepts only
//! loopback `Host` headers, and of browser pages only those of loopback origins, which keeps
//! other web pages from reaching it, by DNS rebinding or otherwise.
//!
//! Beyond loopback every request needs a bearer token, checked one of two ways:
//!
//! ```text
//! # fixed tokens, one a line (optionally followed by the scopes it grants)
//! mcp_server --http 0.0.0.0:8000 --token-file tokens.txt
//! # JWTs from an authorization server, checked against its key set
//! mcp_server --http 0.0.0.0:8000 --jwks https://auth.example.com/jwks.json \
//!     --issuer https://auth.example.com --audience https://tools.example.com/mcp
//! ```
//!
//! Without either, `--http 0.0.0.0:PORT` refuses to start and says why (unless given
//! `--allow-unauthenticated`). A client without a token gets `401` and the address of the
//! server's OAuth metadata (`/.well-known/oauth-protected-resource/mcp`).
//!
//! Several instances behind a load balancer that is not sticky each get a name and the
//! others' addresses; a request for another instance's session is forwarded there:
//!
//! ```text
//! mcp_server --http 10.0.0.1:8000 --token-file t.txt --instance a \
//!     --peer b=http://10.0.0.2:8000/mcp --peer c=http://10.0.0.3:8000/mcp
//! ```
//!
//! The custom tool, `countdown`, reports progress every tenth of a second (MCP
//! `notifications/progress` when the client sent a progress token) and stops when the client
//! cancels it (`notifications/cancelled`), saying so on standard error.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use pi_runtime::mcp::auth::{Authentication, JwksSource, JwtVerifier, StaticTokens};
use pi_runtime::mcp::{Cluster, HttpServing, McpError, McpServer, SessionLimits};
use pi_runtime::tool::ToolHints;
use pi_runtime::tools::{Bash, Edit, Read, WorkingDir, Write};
use pi_runtime::{ToolContext, ToolError, ToolResult, tool};

// A server allocates and frees a little for every request on several threads; glibc's
// malloc took a sixth of the CPU of a loaded server, mimalloc far less.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str = "usage: mcp_server [--http ADDR:PORT [--token-file FILE | --jwks URL \
                     --issuer ISS --audience URI | --allow-unauthenticated] [--instance NAME \
                     [--peer NAME=URL]...] [--max-sessions N] [--max-calls N]] [--dir DIR]";

/// Count down from `seconds`, reporting the time left every tenth of a second. Stops early
/// when the call is cancelled.
#[tool(snippet = "Count down, with progress")]
async fn countdown(
    /// Seconds to count down from, at most 600.
    seconds: f64,
    ctx: ToolContext,
) -> Result<String, ToolError> {
    if !(0.0..=600.0).contains(&seconds) {
        return Err(ToolError::new(format!(
            "seconds must be between 0 and 600, got {seconds}"
        )));
    }
    let steps = (seconds * 10.0).round() as u64;
    for step in 1..=steps {
        tokio::select! {
            () = ctx.signal().cancelled() => {
                eprintln!("countdown: cancelled after {} of {steps} steps", step - 1);
                return Err(ToolError::new("countdown cancelled"));
            }
            () = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
        let left = (steps - step) as f64 / 10.0;
        ctx.update(ToolResult::text(format!("{left:.1} s left")));
    }
    Ok(format!("counted down from {seconds} s"))
}

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp_server: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let mut http: Option<SocketAddr> = None;
    let mut dir = None;
    let mut token_file = None;
    let (mut jwks, mut issuer, mut audience) = (None, None, None);
    let mut unauthenticated = false;
    let mut instance = None;
    let mut peers = Vec::new();
    let mut limits = SessionLimits::default();
    let mut args = std::env::args().skip(1);
    let value = |args: &mut std::iter::Skip<std::env::Args>, flag: &str, what: &str| {
        args.next().ok_or(format!("{flag} needs {what}\n{USAGE}"))
    };
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--token-file" => token_file = Some(value(&mut args, &flag, "FILE")?),
            "--jwks" => jwks = Some(value(&mut args, &flag, "URL")?),
            "--issuer" => issuer = Some(value(&mut args, &flag, "ISS")?),
            "--audience" => audience = Some(value(&mut args, &flag, "URI")?),
            "--allow-unauthenticated" => unauthenticated = true,
            "--instance" => instance = Some(value(&mut args, &flag, "NAME")?),
            "--peer" => peers.push(value(&mut args, &flag, "NAME=URL")?),
            // Sessions (calls) open at once, in total and for one client.
            "--max-sessions" | "--max-calls" => {
                let text = value(&mut args, &flag, "N")?;
                let n: usize = text.parse().map_err(|e| format!("{flag} {text}: {e}"))?;
                limits = if flag == "--max-sessions" {
                    limits.with_max_sessions(n).with_max_sessions_per_client(n)
                } else {
                    limits.with_max_calls(n).with_max_calls_per_client(n)
                };
            }
            "--http" => {
                let value = args
                    .next()
                    .ok_or(format!("--http needs ADDR:PORT\n{USAGE}"))?;
                http = Some(value.parse().map_err(|e| format!("--http {value}: {e}"))?);
            }
            "--dir" => dir = Some(args.next().ok_or(format!("--dir needs DIR\n{USAGE}"))?),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    let cwd = match dir {
        Some(dir) => std::path::PathBuf::from(dir),
        None => std::env::current_dir().map_err(|e| format!("no working directory: {e}"))?,
    };
    let cwd = WorkingDir::from(cwd);
    let server = McpServer::new((
        Read::new(cwd.clone()),
        Write::new(cwd.clone()),
        Edit::new(cwd.clone()),
        Bash::new(cwd.clone().into()),
        Countdown,
    ))
    .map_err(|e| e.to_string())?
    .with_name("pi-tools", env!("CARGO_PKG_VERSION"))
    .with_instructions("File tools and a shell in one project directory.")
    .with_hints("read", ToolHints::new().read_only(true).open_world(false))
    .with_hints(
        "write",
        ToolHints::new().destructive(true).open_world(false),
    )
    .with_hints("edit", ToolHints::new().destructive(true).open_world(false))
    .with_hints("bash", ToolHints::new().destructive(true))
    .with_hints(
        "countdown",
        ToolHints::new().read_only(true).idempotent(true),
    );
    let options = HttpServing::default().with_session_limits(limits);
    let options = match (token_file, jwks, issuer, audience) {
        (None, None, None, None) if unauthenticated => options.allow_unauthenticated(),
        (None, None, None, None) => options,
        (Some(file), None, None, None) => {
            let tokens =
                StaticTokens::from_file(&file).map_err(|e| format!("--token-file: {e}"))?;
            options.with_authentication(Authentication::new(tokens))
        }
        (None, Some(jwks), Some(issuer), Some(audience)) => {
            let verifier = JwtVerifier::new(JwksSource::Url(jwks), &issuer, &audience);
            options.with_authentication(
                Authentication::new(verifier)
                    .with_resource(audience)
                    .with_authorization_server(issuer),
            )
        }
        _ => {
            return Err(format!(
                "use either --token-file, or --jwks with --issuer and --audience\n{USAGE}"
            ));
        }
    };
    let options = match instance {
        Some(name) => {
            let mut cluster = Cluster::new(name).map_err(|e| e.to_string())?;
            for peer in peers {
                let (name, url) = peer
                    .split_once('=')
                    .ok_or(format!("--peer {peer}: expected NAME=URL"))?;
                cluster = cluster.with_peer(name, url).map_err(|e| e.to_string())?;
            }
            options.with_cluster(cluster)
        }
        None if peers.is_empty() => options,
        None => return Err(format!("--peer needs --instance\n{USAGE}")),
    };

    match http {
        None => server.serve_stdio().await.map_err(|e| e.to_string()),
        Some(addr) => {
            let running = server
                .serve_http(addr, options)
                .await
                .map_err(|e| match e {
                    McpError::Unprotected(_) => format!(
                        "{e}.\nHere: --token-file, --jwks (with --issuer and --audience), or \
                     --allow-unauthenticated"
                    ),
                    other => other.to_string(),
                })?;
            // Tests and scripts read this line to find the port.
            println!("listening on {}", running.url());
            tokio::signal::ctrl_c()
                .await
                .map_err(|e| format!("cannot wait for Ctrl-C: {e}"))?;
            running.shutdown().await;
            Ok(())
        }
    }
}
