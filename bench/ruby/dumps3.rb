# dumps3.rb: three heap dumps of an app-like heap (~70 MB each at the default 42,000 records) with a
# slow leak between them, for the heap diff bench against heapy. Usage: ruby dumps3.rb DIR [RECORDS]
require "objspace"
ObjectSpace.trace_object_allocations_start
$app = Array.new((ARGV[1] || 42_000).to_i) { |i| { id: i, name: "user-#{i}", tags: ["a#{i % 5}", "b#{i % 3}"] } }
$leak = []
3.times do |n|
  5_000.times { |i| $leak << "leak #{n}-#{i}" }
  20_000.times.map { |i| "transient #{i}" }
  GC.start
  File.open("#{ARGV[0]}/d#{n + 1}.json", "w") { |f| ObjectSpace.dump_all(output: f) }
end
