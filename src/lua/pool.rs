//! A pool of VMs, each with every tool loaded. Calls go to the least busy VM that holds
//! the functions they need; module-level Lua state is therefore per VM (a tool's upvalues
//! and its required modules exist once per VM), and `store` is the state they share.

use super::vm::LuaVm;
use crate::registry::LuaFnId;
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One VM and how many calls it is serving.
struct Slot {
    vm: LuaVm,
    in_flight: AtomicUsize,
}

/// The VMs of one loaded generation of tools. The first VM is complete by construction
/// (the registry was built from it); replicas may lack files that registered differently.
pub struct VmPool {
    slots: Vec<Slot>,
}

/// A VM lent to one call; counts as busy until dropped.
pub struct Lease<'a> {
    slot: &'a Slot,
}

impl Deref for Lease<'_> {
    type Target = LuaVm;
    fn deref(&self) -> &LuaVm {
        &self.slot.vm
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.slot.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl VmPool {
    /// A pool of `primary` plus `replicas`.
    pub fn new(primary: LuaVm, replicas: Vec<LuaVm>) -> Self {
        let slots = std::iter::once(primary)
            .chain(replicas)
            .map(|vm| Slot {
                vm,
                in_flight: AtomicUsize::new(0),
            })
            .collect();
        Self { slots }
    }

    /// Number of VMs.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Never true: a pool has at least its first VM.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The first VM (holds every function).
    pub fn primary(&self) -> &LuaVm {
        &self.slots[0].vm
    }

    /// The least busy VM holding every function in `needs` (the first VM if none does).
    pub fn lease(&self, needs: &[LuaFnId]) -> Lease<'_> {
        let slot = self
            .slots
            .iter()
            .filter(|slot| needs.iter().all(|id| slot.vm.has(*id)))
            .min_by_key(|slot| slot.in_flight.load(Ordering::Acquire))
            .unwrap_or(&self.slots[0]);
        slot.in_flight.fetch_add(1, Ordering::AcqRel);
        Lease { slot }
    }
}
