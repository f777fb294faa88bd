//! An ad's images (R2.8.4, R2.8.5, R4.1.22): the service fetches them when
//! the ad is saved and keeps them by their SHA-256; the ad's row names each
//! one's hash (`adl_creative`); end users see them only through links the
//! serving region signs, good for 15 minutes.

use hmac::{Hmac, KeyInit, Mac};

use super::Format;
use crate::time::{MINUTE, UnixMs};

/// The largest image the service fetches (refused before reading past it).
pub const MAX_IMAGE_BYTES: usize = 512 * 1024;
/// The widest or tallest image accepted, in pixels.
pub const MAX_SIDE: u32 = 8192;
/// How long an image link is good (R2.8.5).
pub const LINK_VALID_MS: i64 = 15 * MINUTE;
/// How far an image's width-to-height ratio may be from its slot's, as a
/// fraction of it: a 1200×628 landscape image is 1.911:1.
const RATIO_TOLERANCE: f64 = 0.02;

/// Where an image is shown: square (1:1) in the compact format, landscape
/// (1.91:1) in the card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Square,
    Landscape,
}

impl Slot {
    pub const ALL: [Slot; 2] = [Slot::Square, Slot::Landscape];

    /// The record's member and the ad item's creative member (R2.8.4).
    pub fn url_member(self) -> &'static str {
        match self {
            Slot::Square => "image_square_url",
            Slot::Landscape => "image_landscape_url",
        }
    }

    /// The member of the row's `adl_creative` holding the image's hash.
    pub fn creative_member(self) -> &'static str {
        match self {
            Slot::Square => "image_square",
            Slot::Landscape => "image_landscape",
        }
    }

    pub fn format(self) -> Format {
        match self {
            Slot::Square => Format::Compact,
            Slot::Landscape => Format::Card,
        }
    }

    fn ratio(self) -> f64 {
        match self {
            Slot::Square => 1.0,
            Slot::Landscape => 1.91,
        }
    }
}

/// What the first bytes of an accepted image say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    pub content_type: &'static str,
    pub width: u32,
    pub height: u32,
}

/// Whether `bytes` is an image the slot can show: PNG, JPEG, WebP or GIF,
/// at most [`MAX_IMAGE_BYTES`] and [`MAX_SIDE`], in the slot's ratio.
pub fn judge(slot: Slot, bytes: &[u8]) -> Result<Judged, String> {
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(format!("the image is over {MAX_IMAGE_BYTES} bytes"));
    }
    use imagesize::ImageType;
    let content_type = match imagesize::image_type(bytes) {
        Ok(ImageType::Png) => "image/png",
        Ok(ImageType::Jpeg) => "image/jpeg",
        Ok(ImageType::Webp) => "image/webp",
        Ok(ImageType::Gif) => "image/gif",
        _ => return Err("the image is not a PNG, JPEG, WebP or GIF".into()),
    };
    let size = imagesize::blob_size(bytes).map_err(|_| "the image's size cannot be read".to_owned())?;
    let (width, height) = (size.width as u64, size.height as u64);
    if width == 0 || height == 0 || width > MAX_SIDE as u64 || height > MAX_SIDE as u64 {
        return Err(format!("the image is {width}×{height}; each side is 1 to {MAX_SIDE} pixels"));
    }
    let ratio = width as f64 / height as f64;
    if (ratio / slot.ratio() - 1.0).abs() > RATIO_TOLERANCE {
        return Err(format!("the image is {width}×{height}, not {}:1", slot.ratio()));
    }
    Ok(Judged { content_type, width: width as u32, height: height as u32 })
}

/// The signature of a link to the image `sha256_hex` good until
/// `expires` (Unix seconds): HMAC-SHA256 under the region's link secret.
fn link_mac(secret: &[u8], sha256_hex: &str, expires: i64) -> Hmac<sha2::Sha256> {
    let mut mac = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(secret).expect("any key length");
    mac.update(format!("ad-image\n{sha256_hex}\n{expires}").as_bytes());
    mac
}

/// The path and query of a link to `sha256_hex`, signed at `now`.
pub fn link_path(secret: &[u8], sha256_hex: &str, now: UnixMs) -> String {
    let expires = (now.0 + LINK_VALID_MS).div_euclid(1000);
    let sig = hex::encode(link_mac(secret, sha256_hex, expires).finalize().into_bytes());
    format!("/v1/ads/images/{sha256_hex}?expires={expires}&sig={sig}")
}

/// Why a link is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkRefusal {
    /// Not signed by this region's secret for this image and time.
    Invalid,
    /// Past its 15 minutes.
    Expired,
}

/// Checks a link's signature, then its time (a forged link learns nothing
/// about expiry).
pub fn check_link(
    secret: &[u8],
    sha256_hex: &str,
    expires: i64,
    sig_hex: &str,
    now: UnixMs,
) -> Result<(), LinkRefusal> {
    let sig = hex::decode(sig_hex).map_err(|_| LinkRefusal::Invalid)?;
    link_mac(secret, sha256_hex, expires).verify_slice(&sig).map_err(|_| LinkRefusal::Invalid)?;
    if now.0 >= expires.saturating_mul(1000) { Err(LinkRefusal::Expired) } else { Ok(()) }
}

/// A PNG's signature and header chunk: enough for [`judge`] to read its
/// kind and size (tests and examples).
pub fn png_header(width: u32, height: u32) -> Vec<u8> {
    let mut ihdr = b"IHDR".to_vec();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend_from_slice(&13u32.to_be_bytes());
    png.extend_from_slice(&ihdr);
    png.extend_from_slice(&crc32(&ihdr).to_be_bytes());
    png
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    // rule: R2.8.4
    #[test]
    fn each_slot_takes_an_image_of_its_own_ratio_and_kind() {
        assert_eq!(judge(Slot::Square, &png_header(600, 600)).unwrap().content_type, "image/png");
        assert_eq!(judge(Slot::Landscape, &png_header(1200, 628)).unwrap().width, 1200);
        assert!(judge(Slot::Square, &png_header(1200, 628)).is_err());
        assert!(judge(Slot::Landscape, &png_header(600, 600)).is_err());
        assert!(judge(Slot::Square, &png_header(9000, 9000)).is_err());
        assert!(judge(Slot::Square, b"<svg xmlns='http://www.w3.org/2000/svg'/>").is_err());
        let mut big = png_header(600, 600);
        big.resize(MAX_IMAGE_BYTES + 1, 0);
        assert!(judge(Slot::Square, &big).is_err());
    }

    // rule: R2.8.5
    #[test]
    fn a_link_is_good_for_fifteen_minutes_and_only_for_its_image_and_secret() {
        let now = UnixMs(1_800_000_000_000);
        let path = link_path(b"secret", "ab12", now);
        let query = path.split_once('?').unwrap().1;
        let pairs: Vec<(&str, &str)> = query.split('&').filter_map(|p| p.split_once('=')).collect();
        let expires: i64 = pairs[0].1.parse().unwrap();
        let sig = pairs[1].1;
        assert_eq!(expires, (now.0 + LINK_VALID_MS) / 1000);
        assert_eq!(check_link(b"secret", "ab12", expires, sig, now), Ok(()));
        assert_eq!(check_link(b"secret", "ab12", expires, sig, UnixMs(now.0 + LINK_VALID_MS - 1)), Ok(()));
        assert_eq!(
            check_link(b"secret", "ab12", expires, sig, UnixMs(now.0 + LINK_VALID_MS)),
            Err(LinkRefusal::Expired)
        );
        assert_eq!(check_link(b"other", "ab12", expires, sig, now), Err(LinkRefusal::Invalid));
        assert_eq!(check_link(b"secret", "ab13", expires, sig, now), Err(LinkRefusal::Invalid));
        assert_eq!(check_link(b"secret", "ab12", expires + 600, sig, now), Err(LinkRefusal::Invalid));
        assert_eq!(check_link(b"secret", "ab12", expires, "zz", now), Err(LinkRefusal::Invalid));
    }
}
