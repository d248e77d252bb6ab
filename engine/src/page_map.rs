//! Which 64 KiB Wasm pages of the heap and of stable memory one message touched, and the
//! function that touched each first: what the memory tracker charges for, page by page.
//! The engine builds it from the order of the first touches and the profiler's frames; the
//! report draws it.

use serde::{Deserialize, Serialize};

/// One message's touched pages, heap and stable memory apart.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageMap {
    pub heap: MemoryPages,
    pub stable: MemoryPages,
}

/// The touched pages of one memory, by page number, and the memory's size.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryPages {
    /// The memory's size in Wasm pages when the message ended.
    pub size_pages: u64,
    /// Sorted by page.
    pub pages: Vec<TouchedPage>,
}

/// A page the message accessed, and wrote if `written_by` is set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TouchedPage {
    /// The Wasm page's number: its bytes are `page * 65,536 ..` in the memory.
    pub page: u64,
    /// The function running when the page was first accessed.
    pub accessed_by: String,
    /// The function running when it was first written, if it was.
    pub written_by: Option<String>,
}

impl MemoryPages {
    /// From the pages in the order of their first access and first write, and the function
    /// behind each of those touches (same order; missing names read as `?`).
    pub fn from_order(
        size_pages: u64,
        accessed: &[u64],
        accessed_by: &[String],
        written: &[u64],
        written_by: &[String],
    ) -> MemoryPages {
        let name = |names: &[String], i: usize| names.get(i).cloned().unwrap_or_else(|| "?".into());
        let mut pages: Vec<TouchedPage> = accessed
            .iter()
            .enumerate()
            .map(|(i, &page)| TouchedPage {
                page,
                accessed_by: name(accessed_by, i),
                written_by: None,
            })
            .collect();
        pages.sort_by_key(|p| p.page);
        for (i, &page) in written.iter().enumerate() {
            let by = name(written_by, i);
            match pages.binary_search_by_key(&page, |p| p.page) {
                Ok(at) => pages[at].written_by = Some(by),
                // A write is an access too; a page only written still shows.
                Err(at) => pages.insert(
                    at,
                    TouchedPage {
                        page,
                        accessed_by: by.clone(),
                        written_by: Some(by),
                    },
                ),
            }
        }
        MemoryPages { size_pages, pages }
    }

    pub fn accessed(&self) -> usize {
        self.pages.len()
    }

    pub fn written(&self) -> usize {
        self.pages.iter().filter(|p| p.written_by.is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_come_out_sorted_with_who_touched_them_first() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let m = MemoryPages::from_order(
            10,
            &[7, 2, 5],
            &names(&["f", "g", "h"]),
            &[5, 9],
            &names(&["w"]),
        );
        let got: Vec<(u64, &str, Option<&str>)> = m
            .pages
            .iter()
            .map(|p| (p.page, p.accessed_by.as_str(), p.written_by.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                (2, "g", None),
                (5, "h", Some("w")),
                (7, "f", None),
                (9, "?", Some("?"))
            ]
        );
        assert_eq!((m.accessed(), m.written()), (4, 2));
    }
}
