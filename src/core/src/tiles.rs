//! The log as static tiles (c2sp.org/tlog-tiles): where each tile and entry
//! bundle lives, which exist for a tree size, and how a bundle is encoded.
//! The hashes themselves come from [`crate::tlog::Tree`]; this module only
//! names and frames them, so any tile client reads the same log the proof
//! routes answer from.

/// Levels of the tree one tile spans; fixed by the specification.
pub const TILE_HEIGHT: u32 = 8;
/// Hashes in a full tile, and entries in a full bundle.
pub const TILE_WIDTH: u64 = 1 << TILE_HEIGHT;
/// The highest tile level a path may name.
pub const MAX_LEVEL: u8 = 63;
/// The longest path after `tile/` worth reading: `entries/` then an index
/// of at most seven three-digit elements (u64) and `.p/255`.
pub const MAX_PATH_BYTES: usize = 64;

/// What a tile path names: hashes at a level, or the entries themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TileKind {
    /// Hashes of tree level `8 × level`.
    Hashes {
        level: u8,
    },
    Entries,
}

/// A tile or entry bundle: its kind, index in its level and width (256 for
/// a full tile, 1..=255 for a partial one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileRef {
    pub kind: TileKind,
    pub index: u64,
    pub width: u64,
}

/// Why a tile path was refused, for the problem's detail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TilePathError {
    #[error("a tile path is tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>]")]
    Shape,
    #[error("<L> is a decimal level from 0 to 63 with no leading zero")]
    Level,
    #[error("<N> is three-digit elements, all but the last starting with x, with no leading x000")]
    Index,
    #[error("<W> is a decimal width from 1 to 255 with no leading zero")]
    Width,
}

fn decimal(text: &str) -> Option<u64> {
    let canonical = !text.is_empty() && text.len() <= 20 && (text == "0" || !text.starts_with('0'));
    if canonical && text.bytes().all(|b| b.is_ascii_digit()) { text.parse().ok() } else { None }
}

fn three_digits(element: &str) -> Option<u64> {
    (element.len() == 3 && element.bytes().all(|b| b.is_ascii_digit())).then(|| element.parse().ok()).flatten()
}

/// `<N>` from its elements: `x001/x234/067` is 1,234,067.
fn parse_index(elements: &[&str]) -> Result<u64, TilePathError> {
    let (last, leading) = elements.split_last().ok_or(TilePathError::Shape)?;
    let mut index: u64 = 0;
    for (i, element) in leading.iter().enumerate() {
        let value = element.strip_prefix('x').and_then(three_digits).ok_or(TilePathError::Index)?;
        if i == 0 && value == 0 {
            // x000/… names the same tile as the shorter path: one name each.
            return Err(TilePathError::Index);
        }
        index = index.checked_mul(1000).and_then(|n| n.checked_add(value)).ok_or(TilePathError::Index)?;
    }
    let value = three_digits(last).ok_or(TilePathError::Index)?;
    index.checked_mul(1000).and_then(|n| n.checked_add(value)).ok_or(TilePathError::Index)
}

impl TileRef {
    /// Reads the path after `tile/`, refusing every form but the one
    /// canonical spelling of each tile.
    pub fn parse(path: &str) -> Result<TileRef, TilePathError> {
        if path.len() > MAX_PATH_BYTES {
            return Err(TilePathError::Shape);
        }
        let mut elements: Vec<&str> = path.split('/').collect();
        let mut width = TILE_WIDTH;
        // A partial tile ends in `<last>.p/<W>`.
        if elements.len() >= 3 && elements[elements.len() - 2].ends_with(".p") {
            let w = elements.pop().ok_or(TilePathError::Shape)?;
            width = decimal(w).filter(|w| (1..TILE_WIDTH).contains(w)).ok_or(TilePathError::Width)?;
            let last = elements.len() - 1;
            elements[last] = elements[last].strip_suffix(".p").ok_or(TilePathError::Shape)?;
        }
        let (first, index) = elements.split_first().ok_or(TilePathError::Shape)?;
        if index.is_empty() {
            return Err(TilePathError::Shape);
        }
        let kind = if *first == "entries" {
            TileKind::Entries
        } else {
            let level = decimal(first).filter(|l| *l <= u64::from(MAX_LEVEL)).ok_or(TilePathError::Level)?;
            TileKind::Hashes { level: level as u8 }
        };
        Ok(TileRef { kind, index: parse_index(index)?, width })
    }

    /// The path after `tile/`.
    pub fn path(&self) -> String {
        let mut n = self.index;
        let mut encoded = format!("{:03}", n % 1000);
        while n >= 1000 {
            n /= 1000;
            encoded = format!("x{:03}/{encoded}", n % 1000);
        }
        let kind = match self.kind {
            TileKind::Hashes { level } => level.to_string(),
            TileKind::Entries => "entries".to_owned(),
        };
        let partial = if self.width == TILE_WIDTH { String::new() } else { format!(".p/{}", self.width) };
        format!("{kind}/{encoded}{partial}")
    }

    /// The tree level this tile's hashes come from (entries: the leaves).
    pub fn tree_level(&self) -> u32 {
        match self.kind {
            TileKind::Hashes { level } => u32::from(level) * TILE_HEIGHT,
            TileKind::Entries => 0,
        }
    }

    /// The first node of its tree level this tile holds.
    pub fn first(&self) -> Option<u64> {
        self.index.checked_mul(TILE_WIDTH)
    }

    /// Whether a tree of `size` leaves holds this tile: every node it names
    /// is a complete subtree of that tree. A partial tile of any width up to
    /// what the tree holds is served (a prefix of the full tile never
    /// changes), so a client holding an older checkpoint still finds its own.
    pub fn within(&self, size: u64) -> bool {
        let nodes = size.checked_shr(self.tree_level()).unwrap_or(0);
        self.first().and_then(|first| first.checked_add(self.width)).is_some_and(|end| end <= nodes)
    }
}

/// The tile a client reads last at `level` for a tree of `size` leaves, if
/// that level has one (`floor(size / 256^level) mod 256` wide when partial).
pub fn rightmost(level: u8, size: u64) -> Option<TileRef> {
    let nodes = size.checked_shr(u32::from(level) * TILE_HEIGHT).unwrap_or(0);
    if nodes == 0 {
        return None;
    }
    let partial = nodes % TILE_WIDTH;
    let (index, width) =
        if partial == 0 { (nodes / TILE_WIDTH - 1, TILE_WIDTH) } else { (nodes / TILE_WIDTH, partial) };
    Some(TileRef { kind: TileKind::Hashes { level }, index, width })
}

/// An entry bundle: each entry as a big-endian u16 length, then its bytes.
/// `None` when an entry is too long for the frame (a leaf the log never makes).
pub fn entry_bundle<'a>(entries: impl IntoIterator<Item = &'a [u8]>) -> Option<Vec<u8>> {
    let mut bundle = Vec::new();
    for entry in entries {
        let length = u16::try_from(entry.len()).ok()?;
        bundle.extend_from_slice(&length.to_be_bytes());
        bundle.extend_from_slice(entry);
    }
    Some(bundle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hashes(level: u8, index: u64, width: u64) -> TileRef {
        TileRef { kind: TileKind::Hashes { level }, index, width }
    }

    // The specification's own example: index 1234067 is x001/x234/067.
    #[test]
    fn paths_read_and_write_the_specifications_examples() {
        assert_eq!(TileRef::parse("0/x001/x234/067"), Ok(hashes(0, 1_234_067, 256)));
        assert_eq!(hashes(0, 1_234_067, 256).path(), "0/x001/x234/067");
        assert_eq!(TileRef::parse("2/000.p/1"), Ok(hashes(2, 0, 1)));
        assert_eq!(
            TileRef::parse("entries/x001/234.p/8"),
            Ok(TileRef { kind: TileKind::Entries, index: 1234, width: 8 })
        );
        assert_eq!(TileRef { kind: TileKind::Entries, index: 5, width: 200 }.path(), "entries/005.p/200");
    }

    #[test]
    fn every_other_spelling_is_refused() {
        for (path, why) in [
            ("", TilePathError::Shape),
            ("0", TilePathError::Shape),
            ("00/000", TilePathError::Level),
            ("64/000", TilePathError::Level),
            ("-1/000", TilePathError::Level),
            ("data/000", TilePathError::Level),
            ("0/1", TilePathError::Index),
            ("0/0001", TilePathError::Index),
            ("0/001/002", TilePathError::Index),
            ("0/x000/002", TilePathError::Index),
            ("0/x1a2/002", TilePathError::Index),
            ("0/00a", TilePathError::Index),
            ("0/000.p/0", TilePathError::Width),
            ("0/000.p/256", TilePathError::Width),
            ("0/000.p/01", TilePathError::Width),
            ("0/000.p/", TilePathError::Width),
            ("0/000.p", TilePathError::Index),
            ("0/x999/x999/x999/x999/x999/x999/x999/999", TilePathError::Index),
            ("0/x018/x446/x744/x073/x709/x551/616", TilePathError::Index),
        ] {
            assert_eq!(TileRef::parse(path), Err(why), "{path}");
        }
        assert_eq!(TileRef::parse(&"x".repeat(MAX_PATH_BYTES + 1)), Err(TilePathError::Shape));
        assert_eq!(TileRef::parse("0/x018/x446/x744/x073/x709/x551/615").map(|t| t.index), Ok(u64::MAX));
    }

    // The specification's example: a tree of 70,000 leaves is 273 full level 0
    // tiles and a partial of 112, one full level 1 tile and a partial of 17,
    // and a partial level 2 tile of 1.
    #[test]
    fn a_tree_holds_exactly_the_tiles_the_specification_lists() {
        let size = 70_000;
        assert!(hashes(0, 272, 256).within(size));
        assert!(!hashes(0, 273, 256).within(size));
        assert!(hashes(0, 273, 112).within(size));
        assert!(!hashes(0, 273, 113).within(size));
        assert!(hashes(1, 0, 256).within(size));
        assert!(hashes(1, 1, 17).within(size));
        assert!(!hashes(1, 1, 18).within(size));
        assert!(hashes(2, 0, 1).within(size));
        assert!(!hashes(3, 0, 1).within(size));
        assert!(!hashes(63, u64::MAX, 255).within(u64::MAX), "no overflow at the edges");
        assert_eq!(rightmost(0, size), Some(hashes(0, 273, 112)));
        assert_eq!(rightmost(1, size), Some(hashes(1, 1, 17)));
        assert_eq!(rightmost(2, size), Some(hashes(2, 0, 1)));
        assert_eq!(rightmost(3, size), None);
        assert_eq!(rightmost(1, 256), Some(hashes(1, 0, 1)), "a tree of 256 has a partial level 1 tile of 1");
        assert_eq!(rightmost(0, 256), Some(hashes(0, 0, 256)));
    }

    #[test]
    fn a_bundle_frames_each_entry_with_its_length() {
        let bundle = entry_bundle([b"ab".as_slice(), b"".as_slice(), b"xyz".as_slice()]).unwrap();
        assert_eq!(bundle, b"\x00\x02ab\x00\x00\x00\x03xyz");
        assert_eq!(entry_bundle([vec![0u8; 65_536].as_slice()]), None);
    }

    proptest! {
        #[test]
        fn a_path_reads_back_as_its_tile(level in 0u8..=63, index: u64, width in 1u64..=256, entries: bool) {
            let kind = if entries { TileKind::Entries } else { TileKind::Hashes { level } };
            let tile = TileRef { kind, index, width };
            prop_assert_eq!(TileRef::parse(&tile.path()), Ok(tile));
        }

        #[test]
        fn no_path_panics(path in "[0-9xentrisp./]{0,70}") {
            let _ = TileRef::parse(&path);
        }
    }
}
