# locals.rb: frames whose arguments and locals hold values of every kind, parked; before "ready" it prints its own
# view of them (binding.local_variable_get's inspect and class, frame by frame, its threads' Thread#[] and
# thread_variable_get) as
# "oracle" lines of JSON, for snapshot --locals to be checked against (tests/integration/locals.sh).
require "json"
Encoding.default_external = Encoding::UTF_8 # (inspect writes é as it is, as rbscope does, whatever the locale)

FIXNUM_MAX = 2**62 - 1
Point = Struct.new(:x, :y)
class Shape
  def initialize(name, sides = nil)
    @name = name
    @sides = sides if sides
  end
end

$bindings = []
$oracle = []

def note(b, frame)
  b.local_variables.each do |n|
    v = b.local_variable_get(n)
    # (an Integer of more than 8192 bits: rbscope gives its size, not its digits)
    simple = v.nil? || v == true || v == false || v.is_a?(Symbol) || v.is_a?(Float) ||
             (v.is_a?(Integer) && v.abs < 2**8192) || v.is_a?(String)
    # an object of a few ivars, a Struct, a Range: their inspect (an object's without its address)
    fields = v.is_a?(Shape) || v.is_a?(Struct) || v.is_a?(Range)
    $oracle << { frame: frame, name: n.to_s, class: v.class.name || "",
                 inspect: simple || fields ? v.inspect.sub(/\A(#<\w+):0x\h+/, "\\1") : "",
                 simple: simple, fields: fields, bytes: v.is_a?(String) ? v.bytesize : 0 }
  end
end

class Shape
  # self here is a Shape: snapshot shows it as #<Shape>.
  def deep(lv_kw:, lv_opt: 3, **lv_opts)
    lv_nil = nil
    lv_true = true
    lv_false = false
    lv_zero = 0
    lv_neg = -5
    lv_fixmax = FIXNUM_MAX
    lv_big = 2**70
    lv_negbig = -(2**100) - 12345
    lv_bigger = 3**4000
    lv_hugeint = 2**9000
    lv_float = 2.5
    lv_tenth = 0.1
    lv_small = -1.0e-05
    lv_huge = 1.0e+20
    lv_inf = Float::INFINITY
    lv_denormal = 5.0e-320
    lv_digits = 123456.789
    lv_three = 3.0
    lv_sym = :foo
    lv_sym_space = :"with space"
    lv_sym_q = :empty?
    lv_sym_op = :+
    lv_sym_iv = :@name
    lv_dsym = "dyn_#{lv_kw}".to_sym
    lv_str = "plain"
    lv_escapes = "quote\"back\\slash\n\ttab\e[1m"
    lv_interp = "#" + "{not} #$x #@y"
    lv_utf8 = "héllo 日本"
    lv_binary = "\xff\x00ab".b
    lv_invalid = "bad\xffutf8"
    lv_ascii = "ascii".encode("US-ASCII")
    lv_edge = "x" * 64
    lv_long = "y" * 1000
    lv_arr = [1, "two", :three, 4.0]
    lv_hash = { a: 1, "b" => 2 }
    lv_huge_arr = Array.new(1_000_000) { |i| i }
    lv_cyclic = []
    lv_cyclic << lv_cyclic
    lv_struct = Point.new(1, 2)
    lv_obj = Shape.new("sq", 4)
    lv_obj_one = Shape.new(:tri)
    lv_endless = (1..)
    lv_range = (1..10)
    lv_class = String
    lv_module = Comparable
    lv_proc = proc { 1 }
    lv_time = Time.at(0)
    note(binding, "Shape#deep")
    File.write("/dev/null", "") # (nothing: the frame is parked below)
    park
    lv_later = 1 # assigned after the park: nil until then
    lv_later
  end

  def park
    Thread.current[:fl_request] = "req-42"
    Thread.current[:fl_count] = 7
    Thread.current.thread_variable_set(:tv_count, 1)
    Thread.current.thread_variable_set(:tv_big, 2**80)
    other = Thread.new do
      Thread.current[:fl_worker] = :w1
      Thread.current.thread_variable_set(:tv_tenant, "acme")
      th_local = "in thread"
      note(binding, "block in Shape#park")
      sleep
    end
    sleep 0.01 until other.status == "sleep"
    $oracle << { fiber_locals: "main", values: { "fl_request" => "req-42".inspect, "fl_count" => "7" } }
    $oracle << { fiber_locals: "other", values: { "fl_worker" => ":w1" } }
    $oracle << { thread_variables: "main", values: { "tv_count" => "1", "tv_big" => (2**80).inspect } }
    $oracle << { thread_variables: "other", values: { "tv_tenant" => "acme".inspect } }
    $oracle.each { |o| puts "oracle #{JSON.generate(o)}" }
    puts "ready"
    $stdout.flush
    sleep
  end
end

def level1(lv_arg, lv_default = "dflt", *lv_rest)
  lv_l1 = lv_arg * 2
  note(binding, "Object#level1")
  [lv_l1].each do |lv_item|
    lv_in_block = lv_item + 1
    note(binding, "block in Object#level1")
    Shape.new("circle").deep(lv_kw: lv_in_block, lv_extra: 9)
  end
end

$stdout.sync = true
level1(21, "given", :r1, :r2)
