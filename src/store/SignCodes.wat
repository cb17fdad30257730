;; The nearest-neighbour scan of SignCodes.ts: Hamming distances between sign codes, a popcount a 64-bit word.
;; Compiled to SignCodes.wasm by `npm run build:wasm` (wabt); a test checks the two agree.
(module
  (memory (export "memory") 1)
  ;; Hamming distance from the query to every row whose channel is allowed; 0xffff for the others.
  ;; A row is its channel number (i32), 4 bytes of padding, then `words` 64-bit words of signs.
  ;; tiers[d] counts the rows at distance d.
  (func (export "distances")
    (param $rows i32) (param $count i32) (param $words i32) (param $query i32)
    (param $allowed i32) (param $out i32) (param $tiers i32)
    (local $i i32) (local $row i32) (local $stride i32) (local $k i32) (local $d i32) (local $t i32)
    (local.set $stride (i32.shl (i32.add (local.get $words) (i32.const 1)) (i32.const 3)))
    (local.set $row (local.get $rows))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $count)))
        (if (i32.load8_u (i32.add (local.get $allowed) (i32.load (local.get $row))))
          (then
            (local.set $d (i32.const 0))
            (local.set $k (i32.const 0))
            (loop $word
              (local.set $d (i32.add (local.get $d)
                (i32.wrap_i64 (i64.popcnt (i64.xor
                  (i64.load offset=8 (i32.add (local.get $row) (i32.shl (local.get $k) (i32.const 3))))
                  (i64.load (i32.add (local.get $query) (i32.shl (local.get $k) (i32.const 3)))))))))
              (br_if $word (i32.lt_u (local.tee $k (i32.add (local.get $k) (i32.const 1))) (local.get $words))))
            (local.set $t (i32.add (local.get $tiers) (i32.shl (local.get $d) (i32.const 2))))
            (i32.store (local.get $t) (i32.add (i32.load (local.get $t)) (i32.const 1))))
          (else (local.set $d (i32.const 0xffff))))
        (i32.store16 (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 1))) (local.get $d))
        (local.set $row (i32.add (local.get $row) (local.get $stride)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next))))
  ;; The indexes of rows nearer than `edge`, and of the first `room` rows at it, in row order; returns how many.
  (func (export "collect")
    (param $distances i32) (param $count i32) (param $edge i32) (param $room i32) (param $out i32) (result i32)
    (local $i i32) (local $d i32) (local $n i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $count)))
        (local.set $d (i32.load16_u (i32.add (local.get $distances) (i32.shl (local.get $i) (i32.const 1)))))
        (if (i32.or (i32.lt_u (local.get $d) (local.get $edge))
                    (i32.and (i32.eq (local.get $d) (local.get $edge)) (i32.gt_s (local.get $room) (i32.const 0))))
          (then
            (if (i32.eq (local.get $d) (local.get $edge)) (then (local.set $room (i32.sub (local.get $room) (i32.const 1)))))
            (i32.store (i32.add (local.get $out) (i32.shl (local.get $n) (i32.const 2))) (local.get $i))
            (local.set $n (i32.add (local.get $n) (i32.const 1)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $n)))
