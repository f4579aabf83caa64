# cython: language_level=3
"""Guarded read-only mappings of a range of a segment file (see ``_sigbus_guard.h`` for how a truncation under
the mapping is survived). Used by :mod:`kafkaseg.storage.fs` when ``readMode`` maps files; optional at run time
(without a compiler kafkaseg reads with ``pread`` only).
"""

cimport cython
from cpython.buffer cimport PyBUF_WRITABLE, PyBuffer_FillInfo
from libc.stdint cimport uintptr_t


cdef extern from "sys/mman.h":
    void* mmap(void* addr, size_t length, int prot, int flags, int fd, long offset) nogil
    int munmap(void* addr, size_t length) nogil
    int madvise(void* addr, size_t length, int advice) nogil
    void* MAP_FAILED
    int PROT_READ
    int MAP_SHARED

cdef extern from "unistd.h":
    long sysconf(int name) nogil
    int _SC_PAGESIZE

cdef extern from "_sigbus_guard.h":
    int MAP_POPULATE  # 0 where the platform has none
    int MADV_SEQUENTIAL
    int kseg_guard_enter() nogil
    void kseg_guard_leave() nogil
    int kseg_guard_register(uintptr_t start, uintptr_t end) nogil
    int kseg_guard_faulted(int slot) nogil
    void kseg_guard_unregister(int slot) nogil


@cython.final
cdef class MappedRange:
    """Bytes ``[position, position + length)`` of the open file ``fd``, mapped read-only and exposed through the
    buffer protocol (read-only). ``faulted`` turns true if any page of it vanished (the file was truncated) and
    was replaced by zeros: the caller must then discard what it computed from the mapping. ``close()`` unmaps
    it once no buffer is exported any more."""
    cdef char* base  # page-aligned start of the mapping
    cdef size_t mapped  # bytes mapped from base
    cdef char* start  # = base + (position - aligned position)
    cdef Py_ssize_t length
    cdef int slot
    cdef bint entered
    cdef bint closing
    cdef int exports

    def __cinit__(self, int fd, long long position, Py_ssize_t length):
        cdef long page = sysconf(_SC_PAGESIZE)
        cdef long long aligned = position - position % page
        cdef void* p
        self.base = NULL
        self.slot = -1
        self.entered = False
        self.closing = False
        self.exports = 0
        if length <= 0 or position < 0:
            raise ValueError(f"cannot map {length} bytes at {position}")
        self.length = length
        self.mapped = <size_t>(position - aligned + length)
        if kseg_guard_enter() != 0:
            raise OSError("cannot install the SIGBUS guard")
        self.entered = True
        # populated at once: measured faster than faulting pages in as the decoder reaches them
        p = mmap(NULL, self.mapped, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, aligned)
        if p == MAP_FAILED:
            self._unmap()
            raise OSError(f"mmap of {length} bytes at {position} failed")
        self.base = <char*>p
        self.start = self.base + (position - aligned)
        madvise(p, self.mapped, MADV_SEQUENTIAL)
        self.slot = kseg_guard_register(<uintptr_t>self.base, <uintptr_t>self.base + self.mapped)
        if self.slot < 0:
            self._unmap()
            raise OSError("too many guarded mappings open at once")

    @property
    def faulted(self) -> bool:
        """True once a page of this range was found past the file's end (and read as zeros)."""
        return kseg_guard_faulted(self.slot) != 0

    def __getbuffer__(self, Py_buffer* buffer, int flags):
        if self.base == NULL or self.closing:
            raise ValueError("the mapping is closed")
        if flags & PyBUF_WRITABLE:
            raise BufferError("kafkaseg maps segment files read-only")
        PyBuffer_FillInfo(buffer, self, self.start, self.length, 1, flags)
        self.exports += 1

    def __releasebuffer__(self, Py_buffer* buffer):
        self.exports -= 1
        if self.exports == 0 and self.closing:
            self._unmap()

    def close(self):
        """Unmap now, or, while a buffer is still exported (a memoryview somewhere, say in a traceback), as soon
        as the last one is released: never leave a pointer into unmapped memory."""
        self.closing = True
        if self.exports == 0:
            self._unmap()

    cdef void _unmap(self) noexcept:
        if self.base != NULL:
            kseg_guard_unregister(self.slot)
            self.slot = -1
            munmap(self.base, self.mapped)
            self.base = NULL
        if self.entered:
            kseg_guard_leave()
            self.entered = False

    def __dealloc__(self):
        self._unmap()
