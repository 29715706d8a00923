# native.sh: --native: the native functions C methods call, over their Ruby frames, on every Ruby (and a statically
# linked one, its interpreter in the executable): a C extension
# the tests build (its named hot function and callee), zlib (libz), a pipe read (libc, its thread never
# stopped), Debian's ruby-nokogiri (libxml2); the target unharmed at 1 kHz; bad input. Sourced by run (SUITE=spy,
# or SUITE=native alone).
native=$top/tests/integration/ruby/native.rb

# build_ext VERSION: build the test extension for that Ruby; sets $ext_dir (as the Ruby sees it). 0 if built.
build_ext() {
	local root rb=ruby
	if [ "$1" = static ]; then # (scripts/static-ruby ruby: the VM in the executable, extensions loaded by it)
		static_ruby=$("$top/scripts/static-ruby" ruby 2>"$work/ext.log") || return 1
		root=/ rb=$static_ruby
	else
		root=$("$top/scripts/ruby-chroot" "$1" 2>"$work/chroot.err") || return 1
	fi
	if [ "$root" = / ]; then
		ext_dir=$work/native_ext-$1 ext_host=$ext_dir
		mkdir -p "$ext_dir" && cp "$top"/tests/integration/ruby/native_ext/* "$ext_dir"/ &&
			(cd "$ext_dir" && "$rb" extconf.rb && make) >"$work/ext.log" 2>&1 || return 1
	else
		ext_dir=/tmp/rbscope-it/native_ext ext_host=$root/tmp/rbscope-it/native_ext
		mkdir -p "$root$ext_dir" && cp "$top"/tests/integration/ruby/native_ext/* "$root$ext_dir"/ &&
			chroot "$root" sh -c "cd $ext_dir && ruby extconf.rb && make" >"$work/ext.log" 2>&1 || return 1
	fi
	# 3.3: stripped, its symbols in a separate debug file under the chroot's /usr/lib/debug/.build-id (where a
	# -dbgsym package puts them): found through /proc/PID/root, or its static functions go unnamed.
	dbgfile=
	if [ "$1" = 3.3 ]; then
		local so=$ext_host/rbscope_native_test.so id
		id=$(readelf -n "$so" | awk '/Build ID/ { print $3 }')
		[ -n "$id" ] || return 1
		dbgfile=$root/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
		mkdir -p "${dbgfile%/*}" && objcopy --only-keep-debug "$so" "$dbgfile" && strip --strip-all "$so" || return 1
	fi
}

# switches TID: the context switches a thread has made (a ptrace stop is one)
switches() { awk '/ctxt_switches/ { s += $2 } END { print s + 0 }' "/proc/$pid/task/$1/status" 2>/dev/null; }

for ver in $RUBIES static; do
	if ! build_ext "$ver"; then
		skipped "native: ruby $ver: cannot build the test extension here ($(tail -n 3 "$work/ext.log" 2>/dev/null | tr '\n' ' '))"
		continue
	fi
	xml=""
	[ "$ver" = 3.1 ] && ruby -e 'require "nokogiri"' 2>/dev/null && xml=nokogiri
	if ! start_ruby "$ver" "$native" "$ext_dir" $xml; then
		skipped "native: ruby $ver: cannot start it here ($(tail -n 2 "$work/ruby-$ver.out" 2>/dev/null | tr '\n' ' '))"
		continue
	fi
	# The extension's file vanishes once loaded (a deploy replaced it): it is read through /proc/PID/map_files.
	rm -f "$ext_host/rbscope_native_test.so"
	"$RBSCOPE" snapshot -p "$pid" --native >"$work/nsnap.txt" 2>"$work/nsnap.err"
	check "native: ruby $ver: snapshot --native exits 0 $(head -c 200 "$work/nsnap.err")" test $? = 0
	# the reader's frames: libc's first (native), then IO#read, the first Ruby frame
	awk '/^Thread / { on = /"reader"/; next } on && NF' "$work/nsnap.txt" >"$work/reader.txt"
	check "native: ruby $ver: snapshot: libc's functions over IO#read ($(grep -c native "$work/reader.txt") native: $(head -n 1 "$work/reader.txt" | tr -s ' '))" \
		sh -c "head -n 1 '$work/reader.txt' | grep -Eq '\[native, libc[-.]' && grep -v '\[native, libc[-.]' '$work/reader.txt' | head -n 1 | grep -q 'IO#read'"

	# main is in the extension's C method most of the time (else asleep or waiting for the GVL): a few looks
	for _ in $(seq 20); do
		"$RBSCOPE" snapshot -p "$pid" --native 2>/dev/null | awk '/^Thread 1 /,/^$/' >"$work/main.txt"
		grep -q rbscope_test_leaf "$work/main.txt" && break
	done
	check "native: ruby $ver: snapshot: rbscope_test_leaf, rbscope_test_hot and hot over RbscopeNativeTest.hot" \
		sh -c "grep -A4 rbscope_test_leaf '$work/main.txt' | tr -s ' ' | cut -d' ' -f2 | tr '\n' ' ' |
			grep -q '^rbscope_test_leaf rbscope_test_hot hot RbscopeNativeTest.hot'"
	reader=$(awk '/"reader" tid=/ { sub(/tid=/, "", $4); print $4 }' "$work/nsnap.txt")
	before=$(switches "$reader")
	"$RBSCOPE" record -p "$pid" --native -r 200 -d 2 -f collapsed -o "$work/native.col" --raw "$work/native.raw" 2>"$work/native.err"
	check "native: ruby $ver: record --native exits 0 ($(tail -n 1 "$work/native.err"))" test $? = 0
	# As root the kernel copies each sampled thread's registers and stack (BPF sampler): no thread is stopped.
	check "native: ruby $ver: record --native stops no thread: the GVL holder unwound from the kernel's copy at its samples" \
		grep -Eq 'no stop\): the thread holding the GVL [1-9][0-9]* times with native frames, [0-9]+ without; threads on a CPU without it [0-9]+ times; 0 running threads stopped' "$work/native.err"
	after=$(switches "$reader")
	check "native: ruby $ver: the blocked reader is unwound without a stop (context switches $before -> $after over 400 samples)" \
		sh -c "[ -n '$before' ] && [ '$before' = '$after' ]"
	check "native: ruby $ver: the extension's hot function and its callee over the C method (hot -> rbscope_test_hot -> rbscope_test_leaf), its file deleted${dbgfile:+, stripped: named from its debug file in the chroot}" \
		grep -Eq 'RbscopeNativeTest\.hot [^;]*;hot \(rbscope_native_test\.so\);rbscope_test_hot \(rbscope_native_test\.so\);rbscope_test_leaf \(rbscope_native_test\.so\)' "$work/native.col"
	# main alternates between the extension's method and sleep at one depth: a native stack had a moment after
	# the Ruby one must never put one's native frames over the other (the extension's functions over sleep,
	# sleep's ppoll over the extension's method; waiting for the GVL in either is real: pthread_cond_*)
	check "native: ruby $ver: native frames only over the call they belong to ($(grep -o '[0-9]* stacks left without' "$work/native.err"))" \
		sh -c "! grep -Eq 'Kernel#sleep [^;]*;(hot|rbscope_test)|RbscopeNativeTest\.hot [^;]*;([^;]*;)*[^;]*(ppoll|nanosleep)' '$work/native.col'"
	check "native: ruby $ver: libz's deflate over Zlib::Deflate.deflate" \
		grep -Eq 'Zlib::Deflate\.deflate [^;]*;.*;deflate \(libz\.so' "$work/native.col"
	# Debian strips its extensions (no .symtab, only Init_zlib in .dynsym): their functions go by offset.
	if [ "$ver" != static ]; then
		check "native: ruby $ver: a stripped library's functions named by their offset in it ($(grep -Eo 'zlib\.so\+0x[0-9a-f]+ \(zlib\.so\)' "$work/native.col" | head -n 1))" \
			grep -Eq 'Zlib::Deflate\.deflate [^;]*;zlib\.so\+0x[0-9a-f]+ \(zlib\.so\)' "$work/native.col"
	fi
	check "native: ruby $ver: a libc function over IO#read in the recording" \
		grep -Eq 'IO#read [^;]*(;[^;]* \(libc[-.][^;]*\))+(;\(blocked[^;]*\))? [0-9]+$' "$work/native.col"
	if [ -n "$xml" ]; then
		check "native: ruby $ver: libxml2's parser under Nokogiri (ruby-nokogiri)" \
			grep -Eq 'Nokogiri::XML::Document\.read_memory [^;]*;.*xmlParse[A-Za-z]* \(libxml2\.so' "$work/native.col"
	fi
	# Without BPF (--no-bpf, or not root) a running thread is stopped for its registers: the same frames.
	"$RBSCOPE" record -p "$pid" --native --no-bpf -r 200 -d 1 -f collapsed -o "$work/native-nobpf.col" 2>"$work/native-nobpf.err"
	check "native: ruby $ver: record --native --no-bpf stops running threads for their registers, same frames ($(grep -o 'stopped [0-9]* running threads[^;]*' "$work/native-nobpf.err"))" \
		sh -c "grep -Eq 'stopped [1-9][0-9]* running threads' '$work/native-nobpf.err' &&
			grep -Eq 'RbscopeNativeTest\.hot [^;]*;hot \(rbscope_native_test\.so\);rbscope_test_hot' '$work/native-nobpf.col'"
	"$RBSCOPE" top -p "$pid" --native -r 200 -i 1 -n 1 >"$work/native-top.txt" 2>&1
	check "native: ruby $ver: top --native counts the extension's leaf function" grep -q 'rbscope_test_leaf (rbscope_native_test.so)' "$work/native-top.txt"
	"$RBSCOPE" report -i "$work/native.raw" -f collapsed -o "$work/native-report.col"
	check "native: ruby $ver: --raw keeps the native frames: report gives the same stacks" cmp -s "$work/native.col" "$work/native-report.col"
	# pprof: native frames' locations in a mapping per library, as a native profiler's are
	if [ "$ver" = 3.1 ] && command -v protoc >/dev/null; then
		"$RBSCOPE" report -i "$work/native.raw" -f pprof -o "$work/native.pb.gz" 2>/dev/null
		gzip -dc "$work/native.pb.gz" | protoc --decode perftools.profiles.Profile -I "$top/tests/data" \
			"$top/tests/data/profile.proto" >"$work/native-pb.txt" 2>/dev/null
		# the string index of the extension's name, then a mapping naming it that native locations refer to
		ix=$(awk '$1 == "string_table:" { if ($2 == "\"rbscope_native_test.so\"") print n; n++ }' "$work/native-pb.txt")
		check "native: ruby $ver: pprof: the extension's functions in a mapping of their own (string $ix)" \
			awk -v ix="$ix" '/^mapping {/ { m = 1; next } m && $1 == "id:" { id = $2 } m && $1 == "filename:" && $2 == ix { want = id }
				/^}/ { m = 0 } /^location {/ { l = 1; next } l && $1 == "mapping_id:" { used[$2] = 1 } /^}/ { l = 0 }
				END { exit !(ix != "" && want != "" && (want in used)) }' "$work/native-pb.txt"
	elif [ "$ver" = 3.1 ]; then
		skipped "native: ruby 3.1: protoc is not installed (pprof mapping check)"
	fi
	# callgrind: each function names its object, a native one its library, a Ruby one (ruby)
	"$RBSCOPE" report -i "$work/native.raw" -f callgrind -o "$work/native.callgrind" 2>/dev/null
	check "native: ruby $ver: callgrind: the extension's function in the extension's object (ob=), Ruby's in (ruby)" \
		awk '/^c?ob=/ { id = $1; sub(/^c?ob=/, "", id); if (NF > 1) obj[id] = $2; if ($1 ~ /^ob/) ob = obj[id] }
			/^c?fn=/ { id = $1; sub(/^c?fn=/, "", id); if (NF > 1) fn[id] = $2 }
			/^fn=/ { if (fn[id] == "rbscope_test_leaf") leaf = ob; if (fn[id] == "Kernel#loop") rb = ob }
			END { exit !(leaf ~ /rbscope_native_test\.so$/ && rb == "(ruby)") }' "$work/native.callgrind"
	"$RBSCOPE" record -p "$pid" --native -r 200 -d 1 -f firefox -o "$work/native.json" 2>/dev/null
	check "native: ruby $ver: the Firefox profile puts native frames in their own category" \
		ruby -rjson -e 'j = JSON.parse(File.read(ARGV[0])); n = j["meta"]["categories"].index { |c| c["name"] == "Native" }
			exit(n && j["threads"].any? { |t| t["frameTable"]["data"].any? { |f| f[6] == n } } ? 0 : 1)' "$work/native.json"
	if [ "$ver" = 3.1 ]; then
		# The target unharmed: 1 kHz for 60 s, every thread unwound, threads starting and exiting meanwhile.
		"$RBSCOPE" record -p "$pid" --native -r 1000 -d 60 -f summary -o "$work/native-1k.txt" 2>"$work/native-1k.err"
		check "native: ruby $ver: 1 kHz for 60 s: exits 0 ($(tail -n 2 "$work/native-1k.err" | tr '\n' ' '))" test $? = 0
		check "native: ruby $ver: the summary still counts the waits under native frames ($(grep -o '[0-9.]*% of the samples wait' "$work/native-1k.txt"))" \
			grep -q '% of the samples wait' "$work/native-1k.txt"
		sleep 0.5
		check "native: ruby $ver: the process lives on, every checksum right ($(grep -c bad "$work/ruby-$ver.out") bad)" \
			sh -c "kill -0 $pid && ! grep -q bad '$work/ruby-$ver.out'"
	fi
	stop_ruby "$pid"
	if [ -n "$dbgfile" ]; then rm -f "$dbgfile"; fi
done
static_ruby=

"$RBSCOPE" snapshot --core /nonexistent --native >/dev/null 2>"$work/err.txt"
rc=$?
check "native: snapshot --native --core: a usage error, exit 2 (exit $rc: $(head -n 1 "$work/err.txt"))" test $rc = 2
"$RBSCOPE" record -p $$ --native --blocking -d 1 -o /dev/null 2>"$work/err.txt"
rc=$?
check "native: record --native --blocking: a usage error, exit 2 (exit $rc: $(head -n 1 "$work/err.txt"))" test $rc = 2
