//! The sandbox corpus's ad images: drawn from their address, so a sandbox
//! stores them as it stores a fetched image (judged for their slot, kept
//! with the ad) without reaching any network. Each address under [`BASE`]
//! names one picture; the same address always draws the same bytes.

use crate::ads::images::Slot;
use crate::digest::sha256;

/// Where the sandbox's images live. A reserved name (RFC 2606): nothing
/// outside a sandbox answers it, and a sandbox never asks.
pub const BASE: &str = "https://images.sandbox.example/";

/// The square side, and the landscape size (1.91:1).
const SQUARE: (u32, u32) = (600, 600);
const LANDSCAPE: (u32, u32) = (1146, 600);

/// The address of picture `name` (letters, digits, hyphens) for `slot`.
pub fn url(name: &str, slot: Slot) -> String {
    format!("{BASE}{name}-{}.png", slot_name(slot))
}

fn slot_name(slot: Slot) -> &'static str {
    match slot {
        Slot::Square => "square",
        Slot::Landscape => "landscape",
    }
}

/// The PNG at `url`, when it is one of the sandbox's addresses.
pub fn drawn(url: &str) -> Option<Vec<u8>> {
    let file = url.strip_prefix(BASE)?.strip_suffix(".png")?;
    let (name, slot) = file.rsplit_once('-')?;
    let (width, height) = match slot {
        "square" => SQUARE,
        "landscape" => LANDSCAPE,
        _ => return None,
    };
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return None;
    }
    draw(name, width, height)
}

/// A sky from one colour to another with a lit disc: the colours come from
/// the name's hash, so each ad looks its own.
fn draw(name: &str, width: u32, height: u32) -> Option<Vec<u8>> {
    let hash = sha256(name.as_bytes());
    let (top, bottom, disc) = ([hash[0], hash[1], hash[2]], [hash[3] / 3, hash[4] / 3, hash[5] / 3], [255, 236, 180]);
    let (cx, cy, r) = (i64::from(width) * 2 / 3, i64::from(height) / 2, i64::from(height) / 4);
    let mut pixels = Vec::with_capacity((width * height * 3) as usize);
    for y in 0..i64::from(height) {
        let mix =
            |a: u8, b: u8| ((i64::from(a) * (i64::from(height) - y) + i64::from(b) * y) / i64::from(height)) as u8;
        let sky = [mix(top[0], bottom[0]), mix(top[1], bottom[1]), mix(top[2], bottom[2])];
        for x in 0..i64::from(width) {
            let inside = (x - cx).pow(2) + (y - cy).pow(2) <= r * r;
            pixels.extend_from_slice(if inside { &disc } else { &sky });
        }
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().ok()?;
    writer.write_image_data(&pixels).ok()?;
    writer.finish().ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ads::images::{MAX_IMAGE_BYTES, judge};

    // rule: R2.8.4
    #[test]
    fn each_address_draws_one_image_its_slot_takes() {
        for slot in Slot::ALL {
            let address = url("lumio-desk-lamps", slot);
            let image = drawn(&address).unwrap();
            let judged = judge(slot, &image).unwrap();
            assert_eq!(judged.content_type, "image/png");
            assert!(image.len() < MAX_IMAGE_BYTES / 4, "{} bytes", image.len());
            assert_eq!(drawn(&address), Some(image), "the same bytes each time");
        }
        assert_ne!(drawn(&url("a", Slot::Square)), drawn(&url("b", Slot::Square)), "each name its own");
        for outside in [
            "https://shop.example.com/img/a-square.png",
            "https://images.sandbox.example/a-round.png",
            "https://images.sandbox.example/../x-square.png",
            "https://images.sandbox.example/-square.png",
        ] {
            assert_eq!(drawn(outside), None, "{outside}");
        }
    }
}
