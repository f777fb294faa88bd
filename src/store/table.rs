//! Tables: each column family named once, with the type of its values, so
//! a read or a write names the table and the compiler holds it to the
//! table's type. A family that still keeps values of several types under
//! different keys is [`Mixed`]: its callers choose the type, as every
//! caller did before tables, until it is split into tables.

use std::marker::PhantomData;

/// A column family whose every value is a `V`. A read of another type does
/// not compile:
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
    name: &'static str,
    value: PhantomData<fn() -> V>,
}

impl<V> Clone for Table<V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<V> Copy for Table<V> {}

impl<V> Table<V> {
    pub const fn new(name: &'static str) -> Self {
        Table { name, value: PhantomData }
    }

    pub const fn name(self) -> &'static str {
        self.name
    }

    /// The family by its name alone, for lists of families of several types.
    pub const fn named(self) -> Named {
        Named(self.name)
    }
}

/// A column family holding values of several types, each under keys of
/// its own (its declaration says which).
#[derive(Clone, Copy)]
pub struct Mixed {
    name: &'static str,
}

impl Mixed {
    pub const fn new(name: &'static str) -> Self {
        Mixed { name }
    }

    pub const fn name(self) -> &'static str {
        self.name
    }

    pub const fn named(self) -> Named {
        Named(self.name)
    }
}

/// A column family known only by its name at run time: what a replicated
/// change names. It takes bytes already encoded, never a typed value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Named(pub(crate) &'static str);

impl Named {
    /// The family `family` is, by its name.
    pub fn of(family: impl Family) -> Named {
        Named(family.name())
    }
}

/// Any column family: what reads and writes of keys and raw bytes take.
pub trait Family: Copy {
    fn name(self) -> &'static str;
}

/// A family whose values may be read or written as a `T`.
pub trait Holds<T>: Family {}

impl<V> Family for Table<V> {
    fn name(self) -> &'static str {
        self.name
    }
}

impl<V> Holds<V> for Table<V> {}

impl Family for Mixed {
    fn name(self) -> &'static str {
        self.name
    }
}

impl<T> Holds<T> for Mixed {}

impl Family for Named {
    fn name(self) -> &'static str {
        self.0
    }
}
