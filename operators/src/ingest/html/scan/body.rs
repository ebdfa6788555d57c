//! The tree builder's "in body" insertion mode, with the table modes inside it.

use std::borrow::Cow;

use super::names::{self, Flags};
use super::{is_formatting, is_heading, Attributes, Scanner, TablePart, Token};

impl<'a> Scanner<'a> {
    pub(super) fn in_body(&mut self, token: Token<'a>, ignore_lf: bool) -> Option<()> {
        // The table modes, from the innermost table element open: in a table, a section or a
        // row, the current node is that element (the scanner gives up where the tree builder
        // would foster-parent content); in a cell, the body's rules with the cell's own.
        let context = self.table_context();
        let in_cell = context.is_some_and(|index| matches!(self.name_at(index), "td" | "th"));
        if let Some(index) = context.filter(|_| !in_cell) {
            if index != self.stack.len() - 1 {
                return None;
            }
            return self.in_table(token);
        }
        match token {
            Token::Text(raw) => self.text(raw, ignore_lf, false),
            Token::Comment | Token::Doctype(_) | Token::Eof => Some(()),
            Token::Start { name, attributes } => self.start_tag(name, attributes, in_cell),
            Token::End { name } => self.end_tag(name, in_cell),
        }
    }

    /// A start tag in the body (in a cell, with the cell's own rules first).
    fn start_tag(
        &mut self,
        name: Cow<'a, str>,
        attributes: Attributes<'a>,
        in_cell: bool,
    ) -> Option<()> {
        if in_cell
            && matches!(
                &*name,
                "caption" | "col" | "colgroup" | "tbody" | "td" | "tfoot" | "th" | "thead" | "tr"
            )
        {
            self.close_cell()?;
            return self.in_body(Token::Start { name, attributes }, false);
        }
        let name = &*name;
        // Looked up once for the tag: the rules below and the push ask of it.
        let flags = names::flags(name);
        if flags & names::GIVES_UP_IN_BODY != 0 {
            return None;
        }
        if matches!(name, "tbody" | "td" | "tfoot" | "th" | "thead" | "tr" | "head") {
            // Outside a table, ignored.
            return Some(());
        }
        let role = attributes.role().ok()?;
        match name {
            "address" | "article" | "aside" | "blockquote" | "center" | "details" | "dialog"
            | "dir" | "div" | "dl" | "fieldset" | "figcaption" | "figure" | "footer" | "header"
            | "hgroup" | "main" | "nav" | "ol" | "p" | "search" | "section" | "summary" | "ul"
            | "menu" => {
                self.close_p_in_button_scope()?;
                self.push_flagged(name, flags, role);
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.close_p_in_button_scope()?;
                if self.current_flags() & names::HEADING != 0 {
                    self.pop();
                }
                self.push_flagged(name, flags, role);
            }
            "pre" | "listing" => {
                self.close_p_in_button_scope()?;
                self.push_flagged(name, flags, role);
                self.ignore_lf = true;
            }
            "form" => {
                if self.form.is_none() {
                    self.close_p_in_button_scope()?;
                    self.form = Some(self.push_flagged(name, flags, role));
                }
            }
            "li" | "dd" | "dt" => self.start_list_item(name, flags, role)?,
            "button" => {
                if self.in_scope("button", names::BOUNDS_DEFAULT) {
                    return None;
                }
                self.push_flagged(name, flags, role);
            }
            "a" => self.start_a(name, flags, role)?,
            "nobr" => {
                if self.on_stack("nobr") {
                    return None;
                }
                self.push_flagged(name, flags, role);
            }
            "table" => {
                if self.p_in_button_scope() {
                    match self.quirks {
                        Some(false) => self.close_p_in_button_scope()?,
                        _ if !self.doctype_seen => {}
                        _ => return None,
                    }
                }
                self.push_flagged(name, flags, role);
            }
            "hr" => {
                self.close_p_in_button_scope()?;
                self.void_flagged(flags, role);
            }
            "iframe" | "noscript" => {
                self.push_flagged(name, flags, role);
                self.skip_raw(name);
                self.pop();
            }
            "template" => self.template(attributes)?,
            _ if flags & names::VOID != 0 => self.void_flagged(flags, role),
            _ => {
                self.push_flagged(name, flags, role);
            }
        }
        Some(())
    }

    /// An `li`, `dd` or `dt`: the open item of its kind closed, unless a special element
    /// other than `address`, `div` or `p` comes first.
    fn start_list_item(&mut self, name: &str, flags: Flags, role: Option<&str>) -> Option<()> {
        let list = name == "li";
        for index in (0..self.stack.len()).rev() {
            let open = self.name_at(index);
            if (list && open == "li") || (!list && matches!(open, "dd" | "dt")) {
                let open = open.to_string();
                self.generate_implied(&open)?;
                self.pop_until(|n| n == open)?;
                break;
            }
            if self.stack[index].flags & names::SPECIAL != 0
                && !matches!(open, "address" | "div" | "p")
            {
                break;
            }
        }
        self.close_p_in_button_scope()?;
        self.push_flagged(name, flags, role);
        Some(())
    }

    /// An `a`, with the open one closed first.
    fn start_a(&mut self, name: &str, flags: Flags, role: Option<&str>) -> Option<()> {
        if let Some(open) = self.open_a(self.stack.len()) {
            // The adoption agency for the open `a` (mdBook links a heading's
            // text, and a link inside that text nests one in the other). With
            // nothing but ordinary elements opened inside it, there is no
            // furthest block and nothing to reconstruct: the tree builder
            // pops them and the `a`, as end tags would. A special element
            // inside (a cell, a block), a formatting one, or a second `a`
            // further down (perhaps before a cell's marker) is left to it.
            let inside = open + 1..self.stack.len();
            if inside
                .clone()
                .any(|index| self.stack[index].flags & (names::SPECIAL | names::FORMATTING) != 0)
                || self.open_a(open).is_some()
            {
                return None;
            }
            while self.stack.len() > open {
                self.pop();
            }
        }
        self.push_flagged(name, flags, role);
        Some(())
    }

    /// An end tag in the body (in a cell, with the cell's own rules first).
    fn end_tag(&mut self, name: Cow<'a, str>, in_cell: bool) -> Option<()> {
        if in_cell && matches!(&*name, "table" | "tbody" | "tfoot" | "thead" | "tr") {
            if self.in_scope(&name, names::BOUNDS_TABLE) {
                self.close_cell()?;
                return self.in_body(Token::End { name }, false);
            }
            return Some(());
        }
        let name = &*name;
        if in_cell {
            match name {
                "td" | "th" => {
                    if self.in_scope(name, names::BOUNDS_TABLE) {
                        self.generate_implied("")?;
                        self.pop_until(|n| n == name)?;
                    }
                    return Some(());
                }
                "caption" | "col" | "colgroup" => return None,
                _ => {}
            }
        }
        match name {
            "body" | "html" => Some(()),
            "address" | "article" | "aside" | "blockquote" | "button" | "center" | "details"
            | "dialog" | "dir" | "div" | "dl" | "fieldset" | "figcaption" | "figure" | "footer"
            | "header" | "hgroup" | "listing" | "main" | "menu" | "nav" | "ol" | "pre"
            | "search" | "section" | "select" | "summary" | "ul" => {
                if self.in_scope(name, names::BOUNDS_DEFAULT) {
                    self.generate_implied("")?;
                    self.pop_until(|n| n == name)?;
                }
                Some(())
            }
            "form" => self.end_form(),
            "p" => {
                if !self.p_in_button_scope() {
                    self.push("p", None);
                }
                self.generate_implied("p")?;
                self.pop_until(|n| n == "p")
            }
            "li" | "dd" | "dt" => {
                let bounds =
                    if name == "li" { names::BOUNDS_LIST_ITEM } else { names::BOUNDS_DEFAULT };
                if self.in_scope(name, bounds) {
                    self.generate_implied(name)?;
                    self.pop_until(|n| n == name)?;
                }
                Some(())
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                let in_scope = (0..self.stack.len())
                    .rev()
                    .map(|index| self.stack[index].flags)
                    .find(|&flags| flags & (names::HEADING | names::BOUNDS_DEFAULT) != 0)
                    .is_some_and(|flags| flags & names::HEADING != 0);
                if in_scope {
                    self.generate_implied("")?;
                    self.pop_until(is_heading)?;
                }
                Some(())
            }
            "br" => {
                self.void("br", None);
                Some(())
            }
            "option" | "applet" | "marquee" | "object" | "template" | "caption" | "col"
            | "colgroup" => None,
            _ if is_formatting(name) => {
                if self.current() == name {
                    self.pop();
                    Some(())
                } else if self.on_stack(name) {
                    None
                } else {
                    Some(())
                }
            }
            _ => self.end_other(name),
        }
    }

    /// A `form` end tag: the form element closed when in scope.
    fn end_form(&mut self) -> Option<()> {
        let Some(form) = self.form.take() else { return Some(()) };
        let mut in_scope = false;
        for index in (0..self.stack.len()).rev() {
            if self.stack[index].id == form {
                in_scope = true;
                break;
            }
            if self.stack[index].flags & names::BOUNDS_DEFAULT != 0 {
                break;
            }
        }
        if !in_scope {
            return Some(());
        }
        self.generate_implied("")?;
        if self.stack.last().map(|open| open.id) != Some(form) {
            return None;
        }
        self.pop();
        Some(())
    }

    /// Any other end tag: the nearest element of its name, unless a special element comes
    /// first.
    fn end_other(&mut self, name: &str) -> Option<()> {
        for index in (0..self.stack.len()).rev() {
            let open = self.name_at(index);
            if open == name {
                self.generate_implied(name)?;
                while self.stack.len() > index {
                    self.pop_implied()?;
                }
                return Some(());
            }
            if self.stack[index].flags & names::SPECIAL != 0 {
                return Some(());
            }
        }
        Some(())
    }

    /// Closes the open cell (`td` or `th`).
    pub(super) fn close_cell(&mut self) -> Option<()> {
        self.generate_implied("")?;
        self.pop_until(|n| matches!(n, "td" | "th"))
    }

    /// A token in a table, a table section or a row (the current node).
    pub(super) fn in_table(&mut self, token: Token<'a>) -> Option<()> {
        use TablePart::{Row, Section, Table};
        let part = match self.current() {
            "table" => Table,
            "tr" => Row,
            _ => Section,
        };
        match token {
            Token::Text(raw) => self.text(raw, false, true),
            Token::Comment | Token::Doctype(_) | Token::Eof => Some(()),
            Token::Start { name, attributes } => {
                let role = attributes.role().ok()?;
                match (part, &*name) {
                    (Table, "tbody" | "thead" | "tfoot") => {
                        self.push(&name, role);
                        Some(())
                    }
                    (Table, "tr" | "td" | "th") => {
                        self.push("tbody", None);
                        self.in_table(Token::Start { name, attributes })
                    }
                    (Section, "tr") => {
                        self.push("tr", role);
                        Some(())
                    }
                    (Section, "td" | "th") => {
                        self.push("tr", None);
                        self.in_table(Token::Start { name, attributes })
                    }
                    (Section, "tbody" | "thead" | "tfoot") => {
                        self.pop();
                        self.in_table(Token::Start { name, attributes })
                    }
                    (Row, "td" | "th") => {
                        self.push(&name, role);
                        Some(())
                    }
                    (Row, "tr" | "tbody" | "thead" | "tfoot") => {
                        self.pop();
                        self.in_table(Token::Start { name, attributes })
                    }
                    _ => None,
                }
            }
            Token::End { name } => match (part, &*name) {
                (_, "table") => {
                    if self.in_scope("table", names::BOUNDS_TABLE) {
                        self.pop_until(|n| n == "table")?;
                    }
                    Some(())
                }
                (Section, section) if section == self.current() => {
                    self.pop();
                    Some(())
                }
                (Row, "tr") => {
                    self.pop();
                    Some(())
                }
                (Row, "tbody" | "thead" | "tfoot") => {
                    if self.in_scope(&name, names::BOUNDS_TABLE) {
                        self.pop();
                        return self.in_table(Token::End { name });
                    }
                    Some(())
                }
                _ => None,
            },
        }
    }
}
