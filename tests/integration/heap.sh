# heap.sh: `rbscope heap` on dumps written by real Ruby 3.1, 3.3 and 2.7 (sourced by run).
# Each summary must equal what Ruby's own JSON parser makes of the same dump (heap-truth.rb).
canon() { # rbscope's --json groups as sorted "key<TAB>objects<TAB>memsize" lines, equal labels summed
	ruby -rjson -e 'h = Hash.new { |x, k| x[k] = [0, 0] }
		JSON.parse(STDIN.read)["groups"].each { |g| h[g["key"]][0] += g["objects"]; h[g["key"]][1] += g["memsize"] }
		h.map { |k, (n, m)| "#{k}\t#{n}\t#{m}" }.sort.each { |l| puts l }'
}
hd=$top/tests/integration/ruby/heapdump.rb
for ver in 3.1 3.3 2.7; do
	root=$("$top/scripts/ruby-chroot" "$ver" 2>/dev/null) || { skipped "heap: ruby $ver: no Ruby here"; continue; }
	dump=$work/heap-$ver.json
	if [ "$root" = / ]; then
		ruby "$hd" "$dump"
	else
		mkdir -p "$root/tmp/rbscope-it" && cp "$hd" "$root/tmp/rbscope-it/"
		chroot "$root" ruby /tmp/rbscope-it/heapdump.rb /tmp/rbscope-it/heap.json && mv "$root/tmp/rbscope-it/heap.json" "$dump"
	fi
	if [ ! -s "$dump" ]; then
		not_ok "heap: ruby $ver: could not write a dump"
		continue
	fi
	for by in type class location; do
		ruby "$top/tests/integration/ruby/heap-truth.rb" "$dump" $by >"$work/truth-$by"
		"$RBSCOPE" heap summary "$dump" --by $by --top 0 --json | canon >"$work/got-$by"
		check "heap: ruby $ver: summary --by $by equals Ruby's own reading of the dump ($(wc -l <"$work/truth-$by") groups)" \
			cmp -s "$work/truth-$by" "$work/got-$by"
	done
	check "heap: ruby $ver: the 1234 planted objects found by class and by allocation line" \
		awk -F'\t' '$1 == "Planted" && $2 >= 1234 { c = 1 } $1 ~ /heapdump\.rb:8$/ && $2 >= 1234 { l = 1 }
			END { exit !(c && l) }' "$work/got-class" "$work/got-location"
done
dump=$work/heap-3.1.json
# Transparent gzip and standard input give the same answer.
"$RBSCOPE" heap summary "$dump" --by class --top 0 >"$work/plain.txt"
gzip -c "$dump" >"$work/dump.json.gz"
"$RBSCOPE" heap summary "$work/dump.json.gz" --by class --top 0 >"$work/gz.txt"
check "heap: a .gz dump reads the same" cmp -s "$work/plain.txt" "$work/gz.txt"
"$RBSCOPE" heap summary - --by class --top 0 <"$dump" >"$work/stdin.txt"
check "heap: - reads standard input" cmp -s "$work/plain.txt" "$work/stdin.txt"
# Bad input: garbage lines are counted and located, the rest is still analysed; nothing valid exits 8.
{ head -n 100 "$dump"; echo 'not json at all'; echo '[1,2,3]'; tail -n +101 "$dump" | head -c 200000; } >"$work/bad.json"
"$RBSCOPE" heap summary "$work/bad.json" >"$work/bad.out" 2>"$work/bad.err"; rc=$?
check "heap: bad lines skipped and reported with their line numbers, the rest analysed" \
	sh -c "test $rc = 0 && grep -q 'are not heap records (first at line 101, 102' '$work/bad.err' && grep -q STRING '$work/bad.out'"
head -c 5000 /dev/urandom >"$work/random.bin"
"$RBSCOPE" heap summary "$work/random.bin" >/dev/null 2>"$work/e"; rc=$?
check "heap: a file with no records: exit 8 and one line" sh -c "test $rc = 8 && grep -q 'no heap records' '$work/e'"
echo '[{"type":"STRING"}]' >"$work/array.json"
"$RBSCOPE" heap summary "$work/array.json" >/dev/null 2>&1; rc=$?
check "heap: a JSON array instead of JSON lines: exit 8" test $rc = 8
"$RBSCOPE" heap summary "$work/no-such.json" 2>"$work/e"; rc=$?
check "heap: a missing file: non-zero exit, names it" sh -c "test $rc != 0 && grep -q 'no-such.json' '$work/e'"

# The three-dump diff finds a planted leak exactly, and nothing transient, on every Ruby.
lk=$top/tests/integration/ruby/leak.rb
leak_line=$(grep -n '# LEAK$' "$lk" | cut -d: -f1)
transient_line=$(grep -n '# TRANSIENT$' "$lk" | cut -d: -f1)
for ver in 3.1 3.3 2.7; do
	root=$("$top/scripts/ruby-chroot" "$ver" 2>/dev/null) || { skipped "heap diff: ruby $ver: no Ruby here"; continue; }
	d=$work/leak-$ver
	mkdir -p "$d"
	if [ "$root" = / ]; then
		ruby "$lk" "$d"
	else
		mkdir -p "$root/tmp/rbscope-it/leak" && cp "$lk" "$root/tmp/rbscope-it/"
		chroot "$root" ruby /tmp/rbscope-it/leak.rb /tmp/rbscope-it/leak && mv "$root"/tmp/rbscope-it/leak/d*.json "$d/"
	fi
	"$RBSCOPE" heap diff "$d/d1.json" "$d/d2.json" "$d/d3.json" --top 0 >"$work/diff-$ver.txt" 2>&1
	check "heap diff: ruby $ver: the planted leak exactly: 200 Strings at leak.rb:$leak_line, first" \
		sh -c "sed -n 4p '$work/diff-$ver.txt' | grep -Eq '^ +200 +[0-9]+ +[^ ]*leak\\.rb:$leak_line +String$'"
	check "heap diff: ruby $ver: no transient String reported (leak.rb:$transient_line)" \
		sh -c "! grep -Eq 'leak\\.rb:$transient_line +String' '$work/diff-$ver.txt'"
done
"$RBSCOPE" heap diff "$work/leak-3.1/d1.json" "$work/random.bin" >/dev/null 2>&1; rc=$?
check "heap diff: a dump with no records: exit 8" test $rc = 8
