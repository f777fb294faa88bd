//! The pure business rules of the home region's publishing path (Path A).
//!
//! Everything here judges data it is handed: the caller reads the clock, the
//! key register, the live catalogue and the usage ledger, and applies what
//! these functions decide.
//!
//! * [`webauthn`]: passkey (WebAuthn ES256) signatures on DSSE envelopes, and
//!   a software authenticator for the CLI and tests.
//! * [`mandate`]: the mandate an owner or admin seals with a passkey, its
//!   scope, validity and source allow-list (section 2.4).
//! * [`bulk`]: the signed upload policy and bulk files read against their seal.
//! * [`caps`]: the mandate's caps, judged before a body is parsed.
//! * [`price_shock`]: the hold on pushes that would move too many prices.
//! * [`documents`]: sealed withdraw and delete documents (section 2.3).
//! * [`read_rate`]: the catalogue read-back limit.
//! * [`outcome`]: PublishOutcome and PushStatus shapes, and the limits of
//!   section 8.
//! * [`cursor`]: opaque page cursors.

pub mod bulk;
pub mod caps;
pub mod cursor;
pub mod documents;
pub mod mandate;
pub mod outcome;
pub mod price_shock;
pub mod read_rate;
pub mod release;
pub mod webauthn;
