//! The stack of open elements: pushes, pops, the end tags a close implies and the scopes.

use super::names::{self, Flags};
use super::{Open, Scanner};

impl Scanner<'_> {
    pub(super) fn name_at(&self, index: usize) -> &str {
        let start = self.stack[index].start;
        let end = self.stack.get(index + 1).map_or(self.names.len(), |next| next.start);
        &self.names[start..end]
    }

    pub(super) fn current(&self) -> &str {
        if self.stack.is_empty() {
            ""
        } else {
            self.name_at(self.stack.len() - 1)
        }
    }

    pub(super) fn push(&mut self, name: &str, role: Option<&str>) -> u32 {
        self.push_flagged(name, names::flags(name), role)
    }

    /// [`Scanner::push`] with the name's `flags` (`names::flags`), for a caller that has them.
    pub(super) fn push_flagged(&mut self, name: &str, flags: Flags, role: Option<&str>) -> u32 {
        debug_assert_eq!(flags, names::flags(name), "flags of another name");
        self.extraction.open_flagged(flags, role);
        let id = self.next_id;
        self.next_id += 1;
        let below = self.stack.last();
        let table = if flags & names::TABLE_ELEMENT != 0 {
            self.stack.len() as u32 + 1
        } else {
            below.map_or(0, |open| open.table)
        };
        // `in_scope("p", BOUNDS_BUTTON)` from here: this element is the `p`, or bounds the
        // scope, or leaves the answer to the elements below.
        let p_in_button_scope = name == "p"
            || (flags & names::BOUNDS_BUTTON == 0
                && below.is_some_and(|open| open.p_in_button_scope));
        let a =
            if name == "a" { self.stack.len() as u32 + 1 } else { below.map_or(0, |open| open.a) };
        self.stack.push(Open { start: self.names.len(), flags, id, table, p_in_button_scope, a });
        self.names.push_str(name);
        id
    }

    /// Pops the current node; `None` when it is a formatting element (its end tag alone closes
    /// one here: the tree builder would reconstruct it later).
    pub(super) fn pop_implied(&mut self) -> Option<()> {
        if self.current_flags() & names::FORMATTING != 0 {
            return None;
        }
        self.pop();
        Some(())
    }

    pub(super) fn pop(&mut self) {
        let open = self.stack.pop().expect("an open element");
        self.extraction.close_flagged(open.flags);
        self.names.truncate(open.start);
    }

    pub(super) fn void(&mut self, name: &str, role: Option<&str>) {
        self.void_flagged(names::flags(name), role);
    }

    /// [`Scanner::void`] with the name's `flags`.
    pub(super) fn void_flagged(&mut self, flags: Flags, role: Option<&str>) {
        self.extraction.open_flagged(flags, role);
        self.extraction.close_flagged(flags);
    }

    /// The current node's flags (`names::flags`), 0 for none.
    pub(super) fn current_flags(&self) -> Flags {
        self.stack.last().map_or(0, |open| open.flags)
    }

    /// Whether an element named `target` is in the scope `bounds` (a flag of `names`: the
    /// elements that bound it) draws.
    pub(super) fn in_scope(&self, target: &str, bounds: Flags) -> bool {
        for index in (0..self.stack.len()).rev() {
            if self.name_at(index) == target {
                return true;
            }
            if self.stack[index].flags & bounds != 0 {
                return false;
            }
        }
        false
    }

    pub(super) fn on_stack(&self, target: &str) -> bool {
        (0..self.stack.len()).any(|index| self.name_at(index) == target)
    }

    /// "Generate implied end tags", but for `except`.
    pub(super) fn generate_implied(&mut self, except: &str) -> Option<()> {
        while self.current_flags() & names::IMPLIED_END != 0 && self.current() != except {
            self.pop_implied()?;
        }
        Some(())
    }

    /// Pops elements until one for which `is` holds is popped.
    pub(super) fn pop_until(&mut self, is: impl Fn(&str) -> bool) -> Option<()> {
        while !self.stack.is_empty() {
            let done = is(self.current());
            self.pop_implied()?;
            if done {
                return Some(());
            }
        }
        Some(())
    }

    /// `in_scope("p", BOUNDS_BUTTON)`, kept with each open element (`Open`), not walked.
    pub(super) fn p_in_button_scope(&self) -> bool {
        let kept = self.stack.last().is_some_and(|open| open.p_in_button_scope);
        debug_assert_eq!(kept, self.in_scope("p", names::BOUNDS_BUTTON), "the kept p scope");
        kept
    }

    pub(super) fn close_p_in_button_scope(&mut self) -> Option<()> {
        if self.p_in_button_scope() {
            self.generate_implied("p")?;
            self.pop_until(|n| n == "p")?;
        }
        Some(())
    }

    /// The innermost `a` open below `above` (an index of the stack, or its length), by index.
    /// Kept with each open element (`Open::a`), not walked.
    pub(super) fn open_a(&self, above: usize) -> Option<usize> {
        let kept =
            above.checked_sub(1).and_then(|below| (self.stack[below].a as usize).checked_sub(1));
        debug_assert_eq!(
            kept,
            (0..above).rposition(|index| self.name_at(index) == "a"),
            "the kept a"
        );
        kept
    }

    /// The innermost table element open (a cell, a row, a section or a table), by index. Kept
    /// with each open element (`Open::table`), not walked.
    pub(super) fn table_context(&self) -> Option<usize> {
        let kept = self.stack.last().and_then(|open| (open.table as usize).checked_sub(1));
        debug_assert_eq!(
            kept,
            (0..self.stack.len())
                .rev()
                .find(|&index| names::flags(self.name_at(index)) & names::TABLE_ELEMENT != 0),
            "the kept table context"
        );
        kept
    }
}
