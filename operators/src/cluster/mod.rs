//! Clusters: the connected components of the verified pairs (`components`, an incremental
//! union-find), each page's cluster and leader (`assign`), each page's row (`rows`), and the
//! share of a page's sentences already on an earlier page (`share`).

pub mod assign;
pub mod components;
pub mod rows;
pub mod share;
