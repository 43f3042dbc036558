//! Which browser origins the streamable HTTP server takes requests from: the ones the
//! application allows, and its own. rmcp checks both `Host` and `Origin` against our lists;
//! this says what goes in the `Origin` list.
//!
//! A page served by a host the server answers to is one of its own: the loopback names
//! (`localhost`, `127.0.0.1`, `[::1]`) for a server on loopback, the names given to
//! [`with_allowed_hosts`](super::HttpServing::with_allowed_hosts), the address
//! [`serve_http`](crate::mcp::McpServer::serve_http) was bound to. DNS rebinding cannot fake one:
//! the page's origin keeps the attacker's name, and so does the `Host` rmcp refuses.

use std::net::{Ipv6Addr, SocketAddr};

use axum::http::uri::Authority;

/// The schemes a page of our own may be served over.
const SCHEMES: [&str; 2] = ["http", "https"];

/// The `Origin` allow-list for a server that answers to `hosts` (rmcp's allowed `Host`
/// entries, `name` or `name:port`; none when it answers to every name) and is bound to
/// `bound`: `allowed` (the application's), then the origins of pages the server serves.
pub(super) fn allowed_origins(
    allowed: &[String],
    hosts: &[String],
    bound: Option<SocketAddr>,
) -> Vec<String> {
    let own_hosts = hosts.iter().filter_map(|host| authority(host));
    let bound = bound
        .filter(|addr| !addr.ip().is_unspecified())
        .map(|addr| (bracketed(&addr.ip().to_string()), Some(addr.port())));
    let own = own_hosts.chain(bound).flat_map(|(host, port)| {
        let port = port.map_or_else(|| "*".to_owned(), |port| port.to_string());
        SCHEMES.map(|scheme| format!("{scheme}://{host}:{port}"))
    });
    allowed.iter().cloned().chain(own).collect()
}

/// The host (bracketed if IPv6) and port of an allowed `Host` entry.
fn authority(entry: &str) -> Option<(String, Option<u16>)> {
    let entry = entry.trim();
    // A bare IPv6 address (`::1`, as rmcp lists it) is no authority until bracketed.
    if entry.parse::<Ipv6Addr>().is_ok() {
        return Some((bracketed(entry), None));
    }
    let authority = Authority::try_from(entry).ok()?;
    Some((authority.host().to_owned(), authority.port_u16()))
}

/// `host`, in brackets if it is an IPv6 address.
fn bracketed(host: &str) -> String {
    if host.parse::<Ipv6Addr>().is_ok() {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_origins_are_the_allowed_then_those_of_each_host_and_the_bound_address() {
        let hosts = ["localhost", "127.0.0.1", "::1", "tools.example.com:8443"].map(String::from);
        let bound = "10.0.0.1:8000".parse().ok();
        assert_eq!(
            allowed_origins(&["https://app.example.com:*".to_owned()], &hosts, bound),
            [
                "https://app.example.com:*",
                "http://localhost:*",
                "https://localhost:*",
                "http://127.0.0.1:*",
                "https://127.0.0.1:*",
                "http://[::1]:*",
                "https://[::1]:*",
                "http://tools.example.com:8443",
                "https://tools.example.com:8443",
                "http://10.0.0.1:8000",
                "https://10.0.0.1:8000",
            ]
        );
    }

    #[test]
    fn a_wildcard_address_and_no_hosts_add_no_origin() {
        let bound = "0.0.0.0:8000".parse().ok();
        assert_eq!(allowed_origins(&[], &[], bound), Vec::<String>::new());
        let bound = "[::1]:8000".parse().ok();
        assert_eq!(
            allowed_origins(&[], &[], bound),
            ["http://[::1]:8000", "https://[::1]:8000"]
        );
    }
}
