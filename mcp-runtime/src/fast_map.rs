//! [`FastMap`]: the maps a request touches on its way (in flight ids, the catalog's indexes,
//! metric keys): `std`'s `HashMap` with foldhash's seeded hasher, several times cheaper per
//! lookup than SipHash on short keys. Keys a client chooses (request ids) only reach maps
//! bounded per session.

/// `std`'s `HashMap` with foldhash's seeded hasher.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
