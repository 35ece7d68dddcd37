//! A session user's variables: the values its steps captured, by slot, for its later steps' requests and
//! expected values. One per connection slot, cleared when a user starts its session; the values' buffers are
//! reused from user to user, so a steady load allocates nothing here.

/// The values captured so far, by slot (at most 64 per session).
#[derive(Debug, Default)]
pub(crate) struct Vars {
    values: Vec<Vec<u8>>,
    /// Bit `slot` is set when `values[slot]` holds a value.
    set: u64,
}

impl Vars {
    pub fn new(slots: usize) -> Self {
        Vars { values: (0..slots.min(64)).map(|_| Vec::new()).collect(), set: 0 }
    }

    /// A new user: nothing captured yet.
    pub fn clear(&mut self) {
        self.set = 0;
    }

    pub fn set(&mut self, slot: u16, value: &[u8]) {
        if let Some(v) = self.values.get_mut(usize::from(slot)) {
            v.clear();
            v.extend_from_slice(value);
            self.set |= 1 << slot;
        }
    }

    pub fn get(&self, slot: u16) -> Option<&[u8]> {
        (slot < 64 && self.set & (1 << slot) != 0).then(|| self.values.get(usize::from(slot)).map(Vec::as_slice))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_set_read_and_cleared() {
        let mut v = Vars::new(2);
        assert_eq!(v.get(0), None);
        v.set(0, b"tok");
        v.set(1, b"");
        assert_eq!(v.get(0), Some(&b"tok"[..]));
        assert_eq!(v.get(1), Some(&b""[..]));
        v.set(0, b"t2");
        assert_eq!(v.get(0), Some(&b"t2"[..]));
        v.clear();
        assert_eq!(v.get(0), None);
        // A slot the session does not have is never set.
        v.set(5, b"x");
        assert_eq!(v.get(5), None);
    }
}
