//! What the operators share: holding updates until their time is complete (`by_time`), maps
//! whose common entries stay small (`dense`, `compact`), entries found by key in one vector
//! (`placed`), sorted-list kernels (`sorted`), the word store (`store`), maps whose
//! entries go to disk past a bound (`spill`), the failure of those files (`disk`),
//! resident bytes by structure (`footprint`) and stable hashes (`hashing`).

pub mod by_time;
pub mod compact;
pub mod dense;
pub mod disk;
pub mod footprint;
pub mod hashing;
pub mod placed;
pub mod sorted;
pub mod spill;
pub mod store;
