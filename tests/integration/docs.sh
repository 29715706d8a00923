# docs.sh: the manual pages: one per command, each renders without a warning, and its OPTIONS are the
# options the command's own --help lists (both are read: neither is generated from the other).
# Sourced by run (SUITE=docs).
mandir=$top/docs/man
# help_options CMD...: the long options `rbscope CMD... --help` lists, one per line, sorted
help_options() { "$RBSCOPE" "$@" --help | sed -n 's/^  \(-., \|    \)--\([a-z][a-z-]*\).*/\2/p' | sort -u; }
# man_options PAGE: the long options of PAGE's OPTIONS section, as man renders it
man_options() {
	MANWIDTH=200 man -l "$1" 2>/dev/null | awk '/^[A-Z]/ { on = ($1 == "OPTIONS") } on' |
		sed -n 's/^       \(-., \)\?--\([a-z][a-z-]*\).*/\2/p' | sort -u
}
commands=$("$RBSCOPE" --help | sed -n 's/^   \([a-z]*\) .*/\1/p')
check "docs: rbscope --help lists the commands (${commands//$'\n'/ })" test "$(echo "$commands" | wc -l)" -ge 14
check "docs: rbscope.1 renders without warnings" \
	sh -c "test -z \"\$(MANWIDTH=100 man --warnings -l '$mandir/rbscope.1' 2>&1 >/dev/null)\""
for cmd in $commands; do
	page=$mandir/rbscope-$cmd.1
	if [ ! -f "$page" ]; then
		not_ok "docs: $cmd has a manual page (docs/man/rbscope-$cmd.1)"
		continue
	fi
	warn=$(MANWIDTH=100 man --warnings -l "$page" 2>&1 >/dev/null)
	check "docs: rbscope-$cmd.1 renders without warnings${warn:+ ($warn)}" test -z "$warn"
	check "docs: rbscope-$cmd.1 names the command" sh -c "MANWIDTH=100 man -l '$page' 2>/dev/null | grep -Eq 'rbscope +$cmd'"
	check "docs: rbscope.1 points to rbscope-$cmd(1)" grep -q "rbscope\\\\-$cmd" "$mandir/rbscope.1"
	if [ "$cmd" = heap ]; then
		have=$(for sub in summary diff path retained strings live; do help_options heap $sub; done | sort -u)
	else
		have=$(help_options "$cmd")
	fi
	documented=$(man_options "$page")
	check "docs: rbscope-$cmd.1 documents exactly the options of '$cmd --help' (help: ${have//$'\n'/ }; page: ${documented//$'\n'/ })" \
		test "$have" = "$documented"
done
# What help says of an output name's ending is what record does: a name that says no format is refused (exit 2),
# the error and the help listing the same endings.
"$RBSCOPE" help formats >"$work/help-formats.txt" 2>&1
"$RBSCOPE" record -o "$work/profile.unknown" -- true 2>"$work/ending.err"
rc=$?
endings=$(sed -n 's/^Without -f, the ending of -o picks the format: \(.*\)\.$/\1/p' "$work/help-formats.txt")
check "docs: help formats and record agree on an unknown ending: refused, exit 2 (exit $rc; $(head -c 120 "$work/ending.err"))" \
	sh -c "test $rc = 2 && grep -q '^Any other name is refused (exit 2)' '$work/help-formats.txt' && test -n '$endings' &&
		grep -qF '$endings' '$work/ending.err' && ! test -e '$work/profile.unknown'"
