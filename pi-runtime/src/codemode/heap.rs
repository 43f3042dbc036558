//! The VM's allocator: Rust's, which refuses large requests once the script is stopped, so
//! that a built-in running in C when its time limit fires fails at its next large allocation
//! instead of running to its end.
//!
//! QuickJS polls its interrupt handler between bytecode steps (once per 10,000), and a
//! built-in runs to its end in C without a poll: `Object.keys`, object spread, `for-in`,
//! `Array.from` or `String.fromCharCode(...a)` on a large input took tens of milliseconds a
//! call, so a loop of them kept a core busy for minutes after the script's result said it had
//! timed out. Such work builds something large as it goes (an array, a string, a list of
//! keys), and the buffer it grows comes from here: once the host sets `stop`, the built-in
//! gets no memory, throws QuickJS's `out of memory`, and the script unwinds to the next
//! interrupt poll, which ends it. A catch in the script does not help it: every later call
//! fails the same way at once.
//!
//! Only requests of [`LARGE`] bytes and more are refused. Refusing every request (the 4 KiB
//! arenas QuickJS carves small objects from included) reached out-of-memory paths of the engine
//! that leak an object, and `JS_FreeRuntime` then aborts the whole process on its assertion
//! that no object is left (`list_empty(&rt->gc_obj_list)`): one stopped script in a few dozen.
//! Large requests are the ones the heap limit refuses too, on paths the engine's tests and
//! ours (`an_allocation_bomb_fails_at_the_heap_limit`) go through.
//!
//! The heap limit is still QuickJS's own (`JS_SetMemoryLimit`): this quickjs-ng counts every
//! allocation against it whatever the allocator (rquickjs's note that a custom allocator makes
//! the limit a no-op is about older engines; `an_allocation_bomb_fails_at_the_heap_limit`
//! holds it). The interrupt budget needs no part here: it is counted in polls, so it cannot
//! run out while a built-in runs.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rquickjs::allocator::{Allocator, RustAllocator};

/// The smallest request refused once stopped: past the 4 KiB arenas of small objects, and
/// below the buffers of any long built-in (2,048 keys, or 8,192 characters of a wide string).
const LARGE: usize = 16 * 1024;

/// Rust's allocator, failing every request of [`LARGE`] bytes or more that grows the heap once
/// it is armed and `stop` is set.
pub(crate) struct StoppableAllocator {
    stop: Arc<AtomicBool>,
    armed: Rc<Cell<bool>>,
}

impl StoppableAllocator {
    /// The allocator, and the switch that arms it. It refuses nothing before: rquickjs 0.14
    /// reads a new runtime before it checks it for null (`RawRuntime::new_with_allocator` calls
    /// `JS_SetDumpFlags` first), so a script stopped before its thread made the runtime
    /// crashed the process.
    pub(crate) fn new(stop: Arc<AtomicBool>) -> (Self, Rc<Cell<bool>>) {
        let armed = Rc::new(Cell::new(false));
        let allocator = StoppableAllocator {
            stop,
            armed: Rc::clone(&armed),
        };
        (allocator, armed)
    }

    fn refuses(&self, size: usize) -> bool {
        size >= LARGE && self.armed.get() && self.stop.load(Ordering::Relaxed)
    }
}

// SAFETY: every pointer comes from `RustAllocator` and goes back to it, so its contract (sizes,
// the `usize` alignment, `usable_size`) is this allocator's; the only addition is a null
// return, which the contract allows for any request and QuickJS handles as out of memory.
// Frees, and reallocations that do not grow, always go through: the stopped VM's teardown
// frees everything, and QuickJS shrinks buffers on paths that cannot fail.
#[allow(unsafe_code)]
unsafe impl Allocator for StoppableAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if self.refuses(size) {
            return std::ptr::null_mut();
        }
        RustAllocator.alloc(size)
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        if self.refuses(count.saturating_mul(size)) {
            return std::ptr::null_mut();
        }
        RustAllocator.calloc(count, size)
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: the caller's pointer came from `alloc`, `calloc` or `realloc` above, that is
        // from `RustAllocator`.
        unsafe { RustAllocator.dealloc(ptr) }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`; QuickJS never reallocates a null pointer through here
        // (`js_realloc_rt` turns that into an allocation).
        unsafe {
            if self.refuses(new_size) && new_size > RustAllocator::usable_size(ptr) {
                return std::ptr::null_mut();
            }
            RustAllocator.realloc(ptr, new_size)
        }
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: as for `dealloc`.
        unsafe { RustAllocator::usable_size(ptr) }
    }
}
