//! [`setters!`](crate::setters): builder methods that each set one field, declared as the
//! assignment they make instead of a hand-written `fn`, assignment and `self` each.

/// Declares builder methods that take `self` by value, set one field and return `self`.
///
/// Each method is written as its signature without `self` and `-> Self`, and a body that is
/// one assignment to a field of `self`; its doc comments and attributes are kept. Use it
/// inside an `impl` block; a method that does more than set a field stays hand-written.
///
/// ```
/// #[derive(Debug, Default)]
/// pub struct Lamp {
///     level: u8,
///     name: Option<String>,
/// }
///
/// impl Lamp {
///     agentmem_core::setters! {
///         /// Sets the brightness.
///         pub fn with_level(level: u8) { self.level = level }
///         /// Names the lamp.
///         pub fn with_name(name: impl Into<String>) { self.name = Some(name.into()) }
///     }
/// }
///
/// let lamp = Lamp::default().with_level(3).with_name("desk");
/// assert_eq!((lamp.level, lamp.name.as_deref()), (3, Some("desk")));
/// ```
#[macro_export]
macro_rules! setters {
    ($(
        $(#[$attr:meta])*
        $vis:vis fn $name:ident($arg:ident: $ty:ty) { self.$field:ident = $value:expr }
    )*) => {
        $(
            $(#[$attr])*
            $vis fn $name(mut self, $arg: $ty) -> Self {
                self.$field = $value;
                self
            }
        )*
    };
}
