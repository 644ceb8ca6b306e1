"""The reading room and the writing room: every file sinpe reads goes through ``reading``
(regular files only, every declared size checked against the bytes present, decompression
and allocation bounded before they happen); every file it writes goes through ``writing``
(a temporary name in the target folder, then a rename; never a link followed, never an
existing file replaced, appended to or hard-linked). Nothing else in sinpe opens a file.
"""
