//! berth's global allocator: mimalloc, asked the way C's `malloc` is.
//!
//! The policy's parser and walker allocate many small strings, and mimalloc
//! serves that pattern markedly better than glibc's allocator. The
//! `mimalloc` crate's own `GlobalAlloc` sends every allocation through
//! `mi_malloc_aligned`, whose checks of the alignment cost about 27
//! instructions a call; `berth decide --batch` makes some 722,000 over the
//! 4 MB corpus. Every mimalloc block is made of whole words and starts on
//! one, so a layout that asks for no more than a word's alignment — nearly
//! all of Rust's — takes `mi_malloc` (and `mi_zalloc`, `mi_realloc`); a
//! larger alignment still goes through the aligned calls. Every block,
//! however it was made, goes back through `mi_free`.
//!
//! The benches and examples that report the binary's figures include this
//! file (`#[path]`), so they run at the same allocator; its test is the
//! binary's (`main.rs`).

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The alignment every mimalloc block has: it is made of whole words.
const WORD: usize = std::mem::size_of::<usize>();

/// mimalloc, called directly where the layout lets it.
pub struct Mimalloc;

// SAFETY: every pointer handed out comes from mimalloc, aligned as its
// layout asks (a word by every block, more through the aligned calls), or
// is null for a failed allocation, which `GlobalAlloc` allows; every pointer
// taken back is one of those, and mimalloc's `mi_free` and `mi_realloc`
// take any block it made, aligned or not.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc's C allocation calls take any size (and a power
        // of two alignment, which a `Layout` always holds).
        let block = unsafe {
            match layout.align() <= WORD {
                true => mi::mi_malloc(layout.size()),
                false => mi::mi_malloc_aligned(layout.size(), layout.align()),
            }
        };
        block.cast()
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let block = unsafe {
            match layout.align() <= WORD {
                true => mi::mi_zalloc(layout.size()),
                false => mi::mi_zalloc_aligned(layout.size(), layout.align()),
            }
        };
        block.cast()
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (the caller's contract),
        // so from mimalloc.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout` (the
        // caller's contract); the new block keeps that alignment: a word
        // by every block, more through the aligned call.
        let block = unsafe {
            match layout.align() <= WORD {
                true => mi::mi_realloc(ptr.cast::<c_void>(), new_size),
                false => mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()),
            }
        };
        block.cast()
    }
}
