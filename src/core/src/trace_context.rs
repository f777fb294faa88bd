//! W3C Trace Context (`traceparent`): the id a request keeps through the
//! front door, a read region and home, and the span each hop adds.
//! `version-trace_id-parent_id-flags`, lower-case hex; an id of zeros, a
//! version `ff` or anything else out of form is not a trace, and the
//! receiver starts a new one.

/// The header's name.
pub const HEADER: &str = "traceparent";
/// The header an answer names its span in (Trace Context Level 2).
pub const RESPONSE_HEADER: &str = "traceresponse";

/// One hop's place in a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    pub trace_id: [u8; 16],
    /// The span of the hop that sent the header.
    pub parent_id: [u8; 8],
    pub flags: u8,
}

fn lower_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != 2 * N || !text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    hex::decode(text).ok()?.try_into().ok()
}

impl TraceParent {
    /// Reads a `traceparent` value. A later version is read by its first
    /// four fields, as the recommendation asks; version `00` is exact.
    pub fn parse(value: &str) -> Option<TraceParent> {
        let value = value.trim_matches([' ', '\t']);
        let version = value.get(..2).and_then(lower_hex::<1>)?;
        if version[0] == 0xff || value.len() < 55 {
            return None;
        }
        if version[0] == 0 && value.len() != 55 {
            return None;
        }
        if value.len() > 55 && value.as_bytes()[55] != b'-' {
            return None;
        }
        let fields = &value[..55];
        let parts: Vec<&str> = fields.split('-').collect();
        let [_, trace, parent, flags] = parts.as_slice() else { return None };
        let trace_id = lower_hex::<16>(trace).filter(|t| t.iter().any(|b| *b != 0))?;
        let parent_id = lower_hex::<8>(parent).filter(|p| p.iter().any(|b| *b != 0))?;
        let flags = lower_hex::<1>(flags)?[0];
        Some(TraceParent { trace_id, parent_id, flags })
    }

    /// The header value this hop sends on, naming `span` as the parent.
    pub fn child(&self, span: [u8; 8]) -> String {
        format!("00-{}-{}-{:02x}", hex::encode(self.trace_id), hex::encode(span), self.flags & 0x01)
    }

    pub fn trace_hex(&self) -> String {
        hex::encode(self.trace_id)
    }
}

/// A trace id as an operator types it: 32 lower-case hex digits, not zeros.
pub fn parse_trace_id(text: &str) -> Option<[u8; 16]> {
    lower_hex::<16>(text).filter(|t| t.iter().any(|b| *b != 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // The recommendation's own example.
    #[test]
    fn the_recommendations_example_reads_and_a_child_keeps_the_trace() {
        let parent = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(parent.trace_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(parent.parent_id, [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]);
        assert_eq!(parent.flags, 1);
        assert_eq!(parent.child([1; 8]), "00-4bf92f3577b34da6a3ce929d0e0e4736-0101010101010101-01");
        let later = TraceParent::parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-what-comes").unwrap();
        assert_eq!(later.child([2; 8]), "00-4bf92f3577b34da6a3ce929d0e0e4736-0202020202020202-01", "only known flags");
    }

    #[test]
    fn anything_out_of_form_is_not_a_trace() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
            "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
            "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
        assert_eq!(
            parse_trace_id("4bf92f3577b34da6a3ce929d0e0e4736").map(hex::encode).as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        assert_eq!(parse_trace_id("0".repeat(32).as_str()), None);
    }

    proptest! {
        #[test]
        fn no_value_panics(value in "\\PC{0,80}") {
            let _ = TraceParent::parse(&value);
        }

        #[test]
        fn a_child_reads_back(trace: [u8; 16], span: [u8; 8], flags: u8) {
            prop_assume!(trace.iter().any(|b| *b != 0) && span.iter().any(|b| *b != 0));
            let parent = TraceParent { trace_id: trace, parent_id: [9; 8], flags };
            let child = TraceParent::parse(&parent.child(span)).unwrap();
            prop_assert_eq!((child.trace_id, child.parent_id, child.flags), (trace, span, flags & 1));
        }
    }
}
