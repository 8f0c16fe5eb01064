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
    ($trait:ident { $($also:tt)* } $(fn $op:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
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
}

macro_rules! layered_store {
    (
        sessions { $($sv:ident => fn $sn:ident ($($sa:ident : $st:ty),* $(,)?) -> $so:ty { $($sspan:tt)* };)* }
        memories { $($mv:ident => fn $mn:ident ($($ma:ident : $mt:ty),* $(,)?) -> $mo:ty { $($mspan:tt)* };)* }
        checkpoints { $($cv:ident => fn $cn:ident ($($ca:ident : $ct:ty),* $(,)?) -> $co:ty { $($cspan:tt)* };)* }
        graph { $($gv:ident => fn $gn:ident ($($ga:ident : $gt:ty),* $(,)?) -> $go:ty { $($gspan:tt)* };)* }
        vectors { $($vv:ident => fn $vn:ident ($($va:ident : $vt:ty),* $(,)?) -> $vo:ty { $($vspan:tt)* };)* }
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

            $(
                #[doc = concat!("[`SessionStore::", stringify!($sn), "`], forwarded by default.")]
                async fn $sn(&self, $($sa: $st),*) -> Result<$so> {
                    SessionStore::$sn(self.inner(), $($sa),*).await
                }
            )*
            $(
                #[doc = concat!("[`MemoryStore::", stringify!($mn), "`], forwarded by default.")]
                async fn $mn(&self, $($ma: $mt),*) -> Result<$mo> {
                    MemoryStore::$mn(self.inner(), $($ma),*).await
                }
            )*
            $(
                #[doc = concat!("[`CheckpointStore::", stringify!($cn), "`], forwarded by default.")]
                async fn $cn(&self, $($ca: $ct),*) -> Result<$co> {
                    CheckpointStore::$cn(self.inner(), $($ca),*).await
                }
            )*
            $(
                #[doc = concat!("[`GraphStore::", stringify!($gn), "`], forwarded by default.")]
                async fn $gn(&self, $($ga: $gt),*) -> Result<$go> {
                    GraphStore::$gn(self.inner(), $($ga),*).await
                }
            )*
            $(
                #[doc = concat!("[`VectorStore::", stringify!($vn), "`], forwarded by default.")]
                async fn $vn(&self, $($va: $vt),*) -> Result<$vo> {
                    VectorStore::$vn(self.inner(), $($va),*).await
                }
            )*
        }

        layer_is_store!(SessionStore {
            fn backend(&self) -> &'static BackendInfo {
                LayeredStore::backend(self)
            }

            fn capabilities(&self) -> Capabilities {
                LayeredStore::capabilities(self)
            }
        } $(fn $sn($($sa: $st),*) -> $so;)*);
        layer_is_store!(MemoryStore {} $(fn $mn($($ma: $mt),*) -> $mo;)*);
        layer_is_store!(CheckpointStore {} $(fn $cn($($ca: $ct),*) -> $co;)*);
        layer_is_store!(GraphStore {} $(fn $gn($($ga: $gt),*) -> $go;)*);
        layer_is_store!(VectorStore {} $(fn $vn($($va: $vt),*) -> $vo;)*);
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
