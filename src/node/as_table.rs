//! The operator's IP-to-AS table: which autonomous system an address is
//! in, for the `AS…` entries of a mandate's `source_ip_allow_list`. One
//! entry per line, a CIDR block and its AS number (`203.0.113.0/24 AS64500`
//! or `203.0.113.0/24 64500`); blank lines and `#` comments are skipped; the
//! most specific block holding an address names its AS. Read once at start;
//! a line that does not read stops the start, naming the line.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use prefix_trie::PrefixMap;

/// The largest table read, checked before reading.
pub const MAX_BYTES: u64 = 256 << 20;
/// The most entries a table holds.
pub const MAX_ENTRIES: usize = 4_000_000;

#[derive(Debug, thiserror::Error)]
pub enum AsTableError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: the IP-to-AS table is over {MAX_BYTES} bytes", path.display())]
    TooLarge { path: PathBuf },
    #[error("{}, line {line}: {reason}", path.display())]
    Line { path: PathBuf, line: usize, reason: String },
}

#[derive(Default)]
pub struct AsTable {
    v4: PrefixMap<Ipv4Net, u32>,
    v6: PrefixMap<Ipv6Net, u32>,
    entries: usize,
}

impl AsTable {
    pub fn load(path: &Path) -> Result<AsTable, AsTableError> {
        let io = |source| AsTableError::Io { path: path.to_owned(), source };
        if std::fs::metadata(path).map_err(io)?.len() > MAX_BYTES {
            return Err(AsTableError::TooLarge { path: path.to_owned() });
        }
        let text = std::fs::read_to_string(path).map_err(io)?;
        AsTable::parse(&text).map_err(|(line, reason)| AsTableError::Line { path: path.to_owned(), line, reason })
    }

    /// A table from its text; an error names the line (from 1) and why.
    pub fn parse(text: &str) -> Result<AsTable, (usize, String)> {
        let mut table = AsTable::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or_default().trim();
            if line.is_empty() {
                continue;
            }
            let wrong = |reason: &str| (i + 1, reason.to_owned());
            let mut parts = line.split_whitespace();
            let (Some(block), Some(number), None) = (parts.next(), parts.next(), parts.next()) else {
                return Err(wrong("an entry is a CIDR block and an AS number"));
            };
            let block: IpNet = block.parse().map_err(|_| wrong("the block is not a CIDR block"))?;
            let asn: u32 = number
                .strip_prefix("AS")
                .unwrap_or(number)
                .parse()
                .ok()
                .filter(|n| *n != 0)
                .ok_or_else(|| wrong("the AS number is not 1 to 4294967295"))?;
            if table.entries == MAX_ENTRIES {
                return Err(wrong(&format!("the table holds more than {MAX_ENTRIES} entries")));
            }
            match block.trunc() {
                IpNet::V4(net) => table.v4.insert(net, asn),
                IpNet::V6(net) => table.v6.insert(net, asn),
            };
            table.entries += 1;
        }
        Ok(table)
    }

    /// The AS of `ip` (an IPv4-mapped IPv6 address as its IPv4 address).
    pub fn asn(&self, ip: IpAddr) -> Option<u32> {
        match ip {
            IpAddr::V4(v4) => self.v4.get_lpm(&Ipv4Net::from(v4)).map(|(_, asn)| *asn),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => self.asn(IpAddr::V4(v4)),
                None => self.v6.get_lpm(&Ipv6Net::from(v6)).map(|(_, asn)| *asn),
            },
        }
    }

    pub fn len(&self) -> usize {
        self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_specific_block_names_the_as() {
        let table = AsTable::parse(
            "# operator's table\n203.0.113.0/24 AS64500\n203.0.113.128/25 64501 # a customer\n\n2001:db8::/32 AS64502\n",
        )
        .unwrap();
        assert_eq!(table.len(), 3);
        let asn = |ip: &str| table.asn(ip.parse().unwrap());
        assert_eq!(asn("203.0.113.7"), Some(64500));
        assert_eq!(asn("203.0.113.200"), Some(64501));
        assert_eq!(asn("2001:db8::1"), Some(64502));
        assert_eq!(asn("::ffff:203.0.113.7"), Some(64500), "an IPv4-mapped address is its IPv4 address");
        assert_eq!(asn("198.51.100.1"), None);
    }

    #[test]
    fn a_line_that_does_not_read_is_named() {
        for (text, line) in [
            ("203.0.113.0/24\n", 1),
            ("203.0.113.0/24 AS64500\nnot-a-block 1\n", 2),
            ("203.0.113.0/24 AS0\n", 1),
            ("203.0.113.0/24 AS64500 extra\n", 1),
            ("203.0.113.0/24 AS4294967296\n", 1),
        ] {
            assert_eq!(AsTable::parse(text).err().map(|(l, _)| l), Some(line), "{text}");
        }
    }
}
