//! Tables: each declared once, with the column family it lives in, the keys
//! that are its own and their layout, the type of its values, their
//! version, and the migrations that read older versions. A read or a write
//! names the table, and the compiler holds it to the table's type; the
//! store holds it to the table's keys.
//!
//! A table is most often a whole column family. Where a family keeps values
//! of several types, each type is a table of its own over its part of the
//! keys (a prefix, or a shape where no prefix parts them), so no caller
//! chooses a type. `TABLES.md` beside this file lists every table; the
//! tables test (`svc_store::testing::check_tables`) fails when one is added,
//! or its value's format changes, without a migration test.

use std::marker::PhantomData;

use crate::{StoreError, StoreResult};

/// Rewrites a value's body (its postcard, after the version byte) of one
/// version as the next version's.
pub type Migration = fn(&[u8]) -> StoreResult<Vec<u8>>;

/// The most entries a scan of a table reads whole (`Store::scan_all`),
/// unless its declaration says otherwise: a scan past it is an error, not
/// an unbounded read.
pub const MOST: usize = 10_000;

/// Which keys of its column family a table holds.
#[derive(Clone, Copy)]
pub struct Keys {
    /// The layout, in the notation of [`crate::keys`]: `a ‖ b`, `be(n)`.
    pub layout: &'static str,
    /// Every key of the table begins with this (empty: any key).
    pub prefix: &'static [u8],
    /// The table is the one key `prefix`.
    pub exact: bool,
    /// Tells the table's keys from another table's under the same prefix,
    /// where no prefix parts them (a key id, and a key id ‖ nonce).
    pub shape: Option<fn(&[u8]) -> bool>,
}

impl Keys {
    /// Whether `key` is one of the table's.
    pub fn admit(&self, key: &[u8]) -> bool {
        if self.exact {
            return key == self.prefix;
        }
        key.starts_with(self.prefix) && self.shape.is_none_or(|shape| shape(key))
    }
}

/// A table's declaration, whatever its value type.
#[derive(Clone, Copy)]
pub struct Schema {
    /// The table's name: its family's, or `family.part` for a part of one.
    pub table: &'static str,
    /// The RocksDB column family it lives in.
    pub family: &'static str,
    pub keys: Keys,
    /// The version byte its values are written with (the first is 1).
    pub version: u8,
    /// `migrations[i]` rewrites a value of version `i + 1` as version
    /// `i + 2`: a read of an older value applies them in turn.
    pub migrations: &'static [Migration],
    /// The most entries one of its scans reads whole.
    pub most: usize,
    /// The node's own: in home's group, each member writes it itself
    /// (`group`), never through the group.
    pub own: bool,
}

impl Schema {
    /// The body of a stored value, as this build's version of it: the
    /// version byte checked, an older version migrated.
    pub fn body<'a>(&self, bytes: &'a [u8]) -> StoreResult<std::borrow::Cow<'a, [u8]>> {
        let (version, body) = match bytes.split_first() {
            Some((&version, body)) => (version, body),
            None => return Err(StoreError::NoVersion { cf: self.family }),
        };
        if version == self.version {
            return Ok(std::borrow::Cow::Borrowed(body));
        }
        if version == 0 || version > self.version {
            return Err(StoreError::UnknownVersion { cf: self.family, version });
        }
        let mut body = body.to_vec();
        for migrate in &self.migrations[usize::from(version - 1)..] {
            body = migrate(&body)?;
        }
        Ok(std::borrow::Cow::Owned(body))
    }

    /// `key` is the table's, or the error that names it.
    pub fn admit(&self, key: &[u8]) -> StoreResult<()> {
        if self.keys.admit(key) { Ok(()) } else { Err(StoreError::OutsideTable { table: self.table }) }
    }
}

/// A table whose every value is a `V`. A read of another type does not
/// compile:
///
/// ```compile_fail
/// fn read(store: &svc_store::Store) -> Option<u64> {
///     store.get(svc_store::cf::RECORDS, b"k").unwrap()
/// }
/// ```
///
/// while the table's own type does:
///
/// ```
/// fn read(store: &svc_store::Store) -> Option<svc_store::model::RecordHead> {
///     store.get(svc_store::cf::RECORDS, b"k").unwrap()
/// }
/// ```
pub struct Table<V> {
    schema: Schema,
    value: PhantomData<fn() -> V>,
}

impl<V> Clone for Table<V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<V> Copy for Table<V> {}

impl<V> Table<V> {
    /// A table that is the whole of column family `family`, keyed as
    /// `layout` says, at version 1.
    pub const fn new(family: &'static str, layout: &'static str) -> Self {
        Table {
            schema: Schema {
                table: family,
                family,
                keys: Keys { layout, prefix: &[], exact: false, shape: None },
                version: 1,
                migrations: &[],
                most: MOST,
                own: false,
            },
            value: PhantomData,
        }
    }

    /// A table over the keys of `family` that begin with `prefix`.
    pub const fn part(family: &'static str, name: &'static str, prefix: &'static [u8], layout: &'static str) -> Self {
        let mut table = Self::new(family, layout);
        table.schema.table = name;
        table.schema.keys.prefix = prefix;
        table
    }

    /// A table of one key of `family`, `key` itself.
    pub const fn exact(family: &'static str, name: &'static str, key: &'static [u8]) -> Self {
        let mut table = Self::part(family, name, key, "the one key");
        table.schema.keys.exact = true;
        table
    }

    /// The table's own name, for a part of a family.
    pub const fn named_as(mut self, name: &'static str) -> Self {
        self.schema.table = name;
        self
    }

    /// Only the keys `shape` admits are the table's.
    pub const fn shaped(mut self, shape: fn(&[u8]) -> bool) -> Self {
        self.schema.keys.shape = Some(shape);
        self
    }

    /// Values are written at `version`; `migrations` read the older ones,
    /// one for each version before it.
    pub const fn version(mut self, version: u8, migrations: &'static [Migration]) -> Self {
        assert!(version >= 1 && migrations.len() == version as usize - 1, "one migration per older version");
        self.schema.version = version;
        self.schema.migrations = migrations;
        self
    }

    /// The node's own table: in home's group each member writes it itself.
    pub const fn own(mut self) -> Self {
        self.schema.own = true;
        self
    }

    /// A scan of it may read up to `most` entries whole.
    pub const fn most(mut self, most: usize) -> Self {
        self.schema.most = most;
        self
    }

    /// The column family it lives in.
    pub const fn name(self) -> &'static str {
        self.schema.family
    }

    pub const fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The family it lives in, by its name alone, for lists of families.
    pub const fn named(self) -> Named {
        Named(self.schema.family)
    }
}

/// A column family known only by its name at run time: what a replicated
/// change names. It takes bytes already encoded, never a typed value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Named(pub(crate) &'static str);

impl Named {
    /// The family `family` lives in, by its name.
    pub fn of(family: impl Family) -> Named {
        Named(family.name())
    }
}

/// Any column family, or a table in one: what reads and writes of keys
/// and raw bytes take.
pub trait Family: Copy {
    /// The column family's name.
    fn name(self) -> &'static str;
    /// Whether `key` may be read or written through it.
    fn admit(self, _key: &[u8]) -> StoreResult<()> {
        Ok(())
    }
    /// The prefix every key of it begins with.
    fn prefix(self) -> &'static [u8] {
        &[]
    }
    /// Whether it is the node's own (`Table::own`).
    fn own(self) -> bool {
        false
    }
}

/// A table whose values are `T`s.
pub trait Holds<T>: Family {
    fn schema(self) -> Schema;
}

impl<V> Family for Table<V> {
    fn name(self) -> &'static str {
        self.schema.family
    }

    fn admit(self, key: &[u8]) -> StoreResult<()> {
        self.schema.admit(key)
    }

    fn prefix(self) -> &'static [u8] {
        self.schema.keys.prefix
    }

    fn own(self) -> bool {
        self.schema.own
    }
}

impl<V> Holds<V> for Table<V> {
    fn schema(self) -> Schema {
        self.schema
    }
}

impl Family for Named {
    fn name(self) -> &'static str {
        self.0
    }
}
