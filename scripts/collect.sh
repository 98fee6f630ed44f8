#!/usr/bin/env bash
# Pack every file under $OUT into $OUT/all.tar.gz (the device tool returns at most 8 files).
cd "$OUT" && tar czf /tmp/all.tar.gz --exclude=all.tar.gz . && mv /tmp/all.tar.gz "$OUT/all.tar.gz"
