//! Who sent a request: the client address behind the proxies a node trusts
//! (its front doors and regions), never an address a client wrote itself.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::publish::mandate::{AllowEntry, normalise, parse_allow_entry};

/// A block of addresses, `10.0.0.0/8` or `2001:db8::/32`; a bare address
/// is a block of one. Written and judged as a mandate's allow-list entry
/// is, without the AS numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Cidr {
    entry: AllowEntry,
    text: String,
}

impl Cidr {
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.entry.permits(ip, None)
    }
}

impl FromStr for Cidr {
    type Err = String;

    fn from_str(text: &str) -> Result<Cidr, String> {
        match parse_allow_entry(text) {
            Some(AllowEntry::Asn(_)) | None => {
                Err(format!("{text:?} is not an address or a block such as 10.0.0.0/8 (no host bits set)"))
            }
            Some(entry) => Ok(Cidr { entry, text: text.to_owned() }),
        }
    }
}

impl TryFrom<String> for Cidr {
    type Error = String;
    fn try_from(text: String) -> Result<Cidr, String> {
        text.parse()
    }
}

impl From<Cidr> for String {
    fn from(cidr: Cidr) -> String {
        cidr.text
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The client's address: the TCP peer, unless the peer is a trusted proxy;
/// then `X-Forwarded-For` is read from its right end (the entry that proxy
/// added) leftwards, past every trusted proxy, to the first address that
/// is not one. Entries further left were written by the client and are
/// never believed. An entry that is not an address stops the walk at the
/// last proxy that wrote a readable one.
pub fn client_address(peer: IpAddr, forwarded_for: &[&str], trusted: &[Cidr]) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|c| c.contains(ip));
    let mut client = normalise(peer);
    if !is_trusted(client) {
        return client;
    }
    let hops = forwarded_for.iter().rev().flat_map(|header| header.rsplit(','));
    for hop in hops {
        let Ok(ip) = hop.trim().parse::<IpAddr>() else { return client };
        client = normalise(ip);
        if !is_trusted(client) {
            return client;
        }
    }
    client
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn cidrs(list: &[&str]) -> Vec<Cidr> {
        list.iter().map(|c| c.parse().unwrap()).collect()
    }

    #[test]
    fn blocks_contain_their_addresses_only() {
        let block: Cidr = "10.1.0.0/16".parse().unwrap();
        assert!(block.contains(ip("10.1.255.3")));
        assert!(!block.contains(ip("10.2.0.1")));
        assert!(block.contains(ip("::ffff:10.1.0.9")), "an IPv4-mapped peer is its IPv4 address");
        assert!(!block.contains(ip("2001:db8::1")));
        let one: Cidr = "192.0.2.7".parse().unwrap();
        assert!(one.contains(ip("192.0.2.7")) && !one.contains(ip("192.0.2.8")));
        assert!("0.0.0.0/0".parse::<Cidr>().unwrap().contains(ip("203.0.113.1")));
        assert!("2001:db8::/32".parse::<Cidr>().unwrap().contains(ip("2001:db8:ffff::1")));
        for bad in ["10.0.0.0/33", "nonsense", "10.0.0.0/", "::/129", "AS64500", "10.0.0.1/8"] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
        assert_eq!("10.1.0.0/16".parse::<Cidr>().unwrap().to_string(), "10.1.0.0/16");
    }

    #[test]
    fn the_client_is_the_first_untrusted_hop_from_the_right() {
        let trusted = cidrs(&["10.0.0.0/8"]);
        // A direct caller: its header is its own words, never believed.
        assert_eq!(client_address(ip("203.0.113.5"), &["198.51.100.1"], &trusted), ip("203.0.113.5"));
        // Through a front door (10.0.0.2) that added the caller it saw.
        assert_eq!(client_address(ip("10.0.0.2"), &["198.51.100.1, 203.0.113.5"], &trusted), ip("203.0.113.5"));
        // Door, then a region (10.0.0.3) forwarding to home: two hops.
        assert_eq!(
            client_address(ip("10.0.0.3"), &["198.51.100.1, 203.0.113.5", "10.0.0.2"], &trusted),
            ip("203.0.113.5")
        );
        // A proxy with no header: the proxy is the client as far as anyone knows.
        assert_eq!(client_address(ip("10.0.0.2"), &[], &trusted), ip("10.0.0.2"));
        // An unreadable entry stops the walk.
        assert_eq!(client_address(ip("10.0.0.2"), &["junk, 10.0.0.9"], &trusted), ip("10.0.0.9"));
        // No trusted proxies: the TCP peer, always.
        assert_eq!(client_address(ip("10.0.0.2"), &["203.0.113.5"], &[]), ip("10.0.0.2"));
    }
}

/// The tag that binds something handed out (a public MCP session id) to
/// the client address it was handed to: HMAC-SHA256 under the holder's
/// secret, 16 hex digits. Whoever presents it from another address does not
/// match; the secret never leaves the node.
pub fn address_tag(secret: &[u8], client: &str) -> String {
    use hmac::{Hmac, KeyInit, Mac};
    let mut mac = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(secret).expect("any key length");
    mac.update(client.as_bytes());
    hex::encode(&mac.finalize().into_bytes()[..8])
}

#[cfg(test)]
mod tag_tests {
    use super::address_tag;

    #[test]
    fn a_tag_names_one_address_under_one_secret() {
        let tag = address_tag(b"secret", "203.0.113.7");
        assert_eq!(tag.len(), 16);
        assert_eq!(tag, address_tag(b"secret", "203.0.113.7"));
        assert_ne!(tag, address_tag(b"secret", "203.0.113.8"));
        assert_ne!(tag, address_tag(b"other", "203.0.113.7"));
    }
}
