# diffwork.rb [FACTOR]: three functions of steady CPU work in turn, each in its own loop (its self time), the third
# (planted) doing FACTOR times its share (1: the base); for report --diff (tests/integration/diff.sh). Prints "ready"
# once it runs.
$stdout.sync = true
FACTOR = (ARGV[0] || "1").to_i

def parse_input
  i = x = 0
  (x += i * 3 % 7; i += 1) while i < 20_000
  x
end

def render_page
  i = x = 0
  (x += i * 5 % 11; i += 1) while i < 20_000
  x
end

def planted
  i = x = 0
  (x += i * 7 % 13; i += 1) while i < 20_000 * FACTOR
  x
end

puts "ready"
loop do
  parse_input
  render_page
  planted
end
