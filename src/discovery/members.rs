//! An object read as its members in the order written, into a list the caller sizes its
//! own map from (serde's maps grow one entry at a time, rehashing as they go). Both the
//! registration cache's index and `effects.json` read their objects this way.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// An object's members in the order written (duplicate keys kept: the reader decides).
#[derive(Debug)]
pub(super) struct Members<K, V>(pub(super) Vec<(K, V)>);

impl<'de, K: Deserialize<'de>, V: Deserialize<'de>> Deserialize<'de> for Members<K, V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor<K, V>(PhantomData<(K, V)>);
        impl<'de, K: Deserialize<'de>, V: Deserialize<'de>> Visitor<'de> for MembersVisitor<K, V> {
            type Value = Members<K, V>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(MembersVisitor(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::Members;

    #[test]
    fn members_keep_their_order_and_duplicates() {
        let members: Members<&str, u32> =
            serde_json::from_str(r#"{"b":1,"a":2,"b":3}"#).expect("an object");
        assert_eq!(members.0, [("b", 1), ("a", 2), ("b", 3)]);
    }
}
