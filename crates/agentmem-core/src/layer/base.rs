//! [`LayeredStore`]: the base of every layer. A layer names its inner store and overrides the
//! operations it changes; every other operation reaches the inner store unchanged, so a layer
//! cannot lose one (as OpenDAL's `LayeredAccess` does for its services).
//!
//! The trait, and the [`SessionStore`], [`MemoryStore`], [`CheckpointStore`], [`GraphStore`]
//! and [`VectorStore`] impls every `LayeredStore` gets, are
//! generated from the one list of operations ([`for_each_operation!`](crate::operation)), as
//! are the forwarding impls that make `Arc<T>`, `Box<T>` and `&'static T` stores themselves.

use std::sync::Arc;

use crate::backend::BackendInfo;
use crate::error::Result;
use crate::operation::for_each_operation;
use crate::store::{
    AgentMemory, Capabilities, CheckpointStore, GraphStore, MemoryStore, SessionStore, VectorStore,
};

/// The blanket impl of one store trait for every [`LayeredStore`]: each operation calls the
/// layer's own (its override, or the default that forwards to the inner store).
macro_rules! layer_is_store {
    (@impl $trait:ident { $($also:tt)* } $(fn $op:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        #[$crate::async_trait]
        impl<L: LayeredStore> $trait for L {
            $($also)*

            $(
                async fn $op(&self, $($arg: $ty),*) -> Result<$out> {
                    LayeredStore::$op(self, $($arg),*).await
                }
            )*
        }
    };
    // `backend` and `capabilities` are not operations, but a layer may change them too.
    (SessionStore $($ops:tt)*) => {
        layer_is_store!(@impl SessionStore {
            fn backend(&self) -> &'static BackendInfo {
                LayeredStore::backend(self)
            }

            fn capabilities(&self) -> Capabilities {
                LayeredStore::capabilities(self)
            }
        } $($ops)*);
    };
    ($trait:ident $($ops:tt)*) => {
        layer_is_store!(@impl $trait {} $($ops)*);
    };
}

macro_rules! layered_store {
    (
        stores { $($trait:ident {
            $($v:ident => fn $n:ident ($($a:ident : $t:ty),* $(,)?) -> $o:ty { $($span:tt)* };)*
        })* }
        others { $($others:tt)* }
    ) => {
        /// A store that wraps another, [`Inner`](Self::Inner), and forwards to it every operation
        /// it does not override: the base of every layer.
        ///
        /// Implement [`inner`](Self::inner) and the operations the layer changes; the type is
        /// then a [`SessionStore`], a [`MemoryStore`], a [`CheckpointStore`], a [`GraphStore`] and a [`VectorStore`] (so an
        /// [`AgentMemory`]) through blanket impls, and every operation added to the traits later
        /// reaches the inner store unchanged. `Arc<T>`, `Box<T>` and `&'static T` are layers that
        /// change nothing, which is how `Arc<dyn AgentMemory>` is a store.
        ///
        /// With this trait in scope, calling an operation on a concrete layer type is ambiguous
        /// between it and [`SessionStore`]/[`MemoryStore`]; call through those traits (or import
        /// this one only where the layer is written). See [the module docs](crate::layer) for
        /// an example.
        #[$crate::async_trait]
        pub trait LayeredStore: std::fmt::Debug + Send + Sync + 'static {
            /// The store this one wraps.
            type Inner: AgentMemory + ?Sized;

            /// The store this one wraps.
            fn inner(&self) -> &Self::Inner;

            /// [`SessionStore::backend`]: the inner store's by default.
            fn backend(&self) -> &'static BackendInfo {
                SessionStore::backend(self.inner())
            }

            /// [`SessionStore::capabilities`]: the inner store's by default.
            fn capabilities(&self) -> Capabilities {
                SessionStore::capabilities(self.inner())
            }

            $($(
                #[doc = concat!("[`", stringify!($trait), "::", stringify!($n), "`], forwarded by default.")]
                async fn $n(&self, $($a: $t),*) -> Result<$o> {
                    $trait::$n(self.inner(), $($a),*).await
                }
            )*)*
        }

        $(layer_is_store!($trait $(fn $n($($a: $t),*) -> $o;)*);)*
    };
}

for_each_operation!(layered_store);

/// A shared store is a store: every operation forwarded.
impl<T: AgentMemory + ?Sized> LayeredStore for Arc<T> {
    type Inner = T;
    fn inner(&self) -> &T {
        self
    }
}

/// A boxed store is a store: every operation forwarded.
impl<T: AgentMemory + ?Sized> LayeredStore for Box<T> {
    type Inner = T;
    fn inner(&self) -> &T {
        self
    }
}

/// A store borrowed for the program's life is a store: every operation forwarded.
impl<T: AgentMemory + ?Sized> LayeredStore for &'static T {
    type Inner = T;
    fn inner(&self) -> &T {
        self
    }
}
