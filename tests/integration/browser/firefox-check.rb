# firefox-check.rb: check a Gecko profile (rbscope's firefox format) the way the Firefox Profiler's
# importer reads it: the meta fields it requires, and per thread, tables whose indices all resolve.
# Usage: ruby firefox-check.rb FILE THREAD=FRAME... — each THREAD must be a thread whose samples are
# mostly in FRAME (a location starting with it), and no other given FRAME may appear in that thread.
# Prints "ok ..." and exits 0, or prints the problems and exits 1.
require "json"

# The colour names the profiler knows (src/utils/colors.ts); any other is drawn grey with an error.
COLOURS = %w[transparent lightblue red lightred orange blue green purple yellow brown magenta
             lightgreen gray grey darkgray darkgrey].freeze
FRAME_SCHEMA = %w[location relevantForJS innerWindowID implementation line column category subcategory].freeze
MARKER_SCHEMA = %w[name startTime endTime phase category data].freeze

def check_meta(meta, problems)
  %w[version startTime shutdownTime interval stackwalk debug gcpoison asyncstack processType
     categories markerSchema product].each { |k| problems << "meta.#{k} missing" unless meta.key?(k) }
  problems << "meta.version #{meta['version']}" unless meta["version"].is_a?(Integer) && meta["version"].between?(1, 36)
  problems << "meta.startTime #{meta['startTime']} is not ms since the epoch" unless meta["startTime"].to_f > 1e12
  problems << "meta.interval #{meta['interval']}" unless meta["interval"].to_f.positive?
  problems << "meta.product #{meta['product'].inspect}" unless meta["product"].to_s.match?(/\Arbscope \(Ruby \d/)
  cats = meta["categories"] || []
  names = cats.map { |c| c["name"] }
  problems << "categories #{names}" unless (%w[Ruby C Other] - names).empty?
  cats.each do |c|
    problems << "category #{c['name']}: colour #{c['color']}" unless COLOURS.include?(c["color"])
    problems << "category #{c['name']}: no subcategories" unless c["subcategories"].is_a?(Array) && c["subcategories"].any?
  end
  problems << "no grey category (the profiler's default)" unless cats.any? { |c| c["color"] == "grey" }
end

def schema_of(table)
  (table["schema"] || {}).sort_by { |_, v| v }.map(&:first)
end

# The problems of one thread; returns its stacks resolved to location strings, leaf last, per sample.
def check_thread(t, meta, problems)
  id = "thread #{t['name'].inspect}"
  %w[name tid pid processType registerTime unregisterTime markers samples stackTable frameTable stringTable]
    .each { |k| problems << "#{id}: #{k} missing" unless t.key?(k) }
  strings = t["stringTable"] || []
  problems << "#{id}: stringTable holds a non-string" unless strings.all?(String)
  problems << "#{id}: markers schema #{schema_of(t['markers'])}" unless schema_of(t["markers"] || {}) == MARKER_SCHEMA
  problems << "#{id}: frameTable schema #{schema_of(t['frameTable'])}" unless schema_of(t["frameTable"] || {}) == FRAME_SCHEMA
  problems << "#{id}: stackTable schema" unless schema_of(t["stackTable"] || {}) == %w[prefix frame]
  sschema = schema_of(t["samples"] || {})
  unless sschema[0, 2] == %w[stack time] && (sschema.include?("eventDelay") || sschema.include?("responsiveness"))
    problems << "#{id}: samples schema #{sschema} (the importer needs stack, time and eventDelay)"
  end
  frames = t.dig("frameTable", "data") || []
  cats = meta["categories"] || []
  frames.each_with_index do |f, i|
    loc, js, _win, _impl, line, _col, cat, sub = f
    problems << "#{id}: frame #{i} has #{f.size} columns" unless f.size == FRAME_SCHEMA.size
    problems << "#{id}: frame #{i} location #{loc}" unless loc.is_a?(Integer) && loc >= 0 && loc < strings.size
    problems << "#{id}: frame #{i} relevantForJS #{js.inspect}" unless [true, false].include?(js)
    problems << "#{id}: frame #{i} line #{line.inspect}" unless line.nil? || (line.is_a?(Integer) && line.positive?)
    unless cat.is_a?(Integer) && cat >= 0 && cat < cats.size && sub.is_a?(Integer) && sub >= 0 &&
           sub < cats[cat]["subcategories"].size
      problems << "#{id}: frame #{i} category #{cat.inspect}/#{sub.inspect}"
    end
  end
  stacks = t.dig("stackTable", "data") || []
  stacks.each_with_index do |(prefix, frame), i|
    problems << "#{id}: stack #{i} prefix #{prefix.inspect}" unless prefix.nil? || (prefix.is_a?(Integer) && prefix >= 0 && prefix < i)
    problems << "#{id}: stack #{i} frame #{frame.inspect}" unless frame.is_a?(Integer) && frame >= 0 && frame < frames.size
  end
  return [] unless problems.empty?

  last = 0.0
  limit = meta["profilingEndTime"] || Float::INFINITY
  (t.dig("samples", "data") || []).map do |stack, time|
    problems << "#{id}: sample stack #{stack.inspect}" unless stack.nil? || (stack.is_a?(Integer) && stack >= 0 && stack < stacks.size)
    problems << "#{id}: sample time #{time} after #{last}" unless time.is_a?(Numeric) && time >= last
    problems << "#{id}: sample time #{time} outside 0..#{limit}" unless time.is_a?(Numeric) && time >= 0 && time <= limit
    last = time if time.is_a?(Numeric)
    path = []
    while stack.is_a?(Integer) && stack < stacks.size
      path.unshift(strings[frames[stacks[stack][1]][0]])
      stack = stacks[stack][0]
    end
    path
  end
end

file, *pairs = ARGV
want = pairs.map { |p| p.split("=", 2) }
problems = []
begin
  j = JSON.parse(File.read(file))
rescue StandardError => e
  puts "cannot parse #{file}: #{e.message[0, 200]}"
  exit 1
end
%w[libs threads pausedRanges processes].each { |k| problems << "#{k} is not an array" unless j[k].is_a?(Array) }
meta = j["meta"] || {}
check_meta(meta, problems)
threads = j["threads"] || []
samples = threads.to_h { |t| [t["name"], check_thread(t, meta, problems)] }
want.each do |thread, frame|
  stacks = samples[thread]
  next problems << "no thread #{thread.inspect} among #{samples.keys}" unless stacks
  names = threads.find { |t| t["name"] == thread }["stringTable"]
  problems << "#{thread}: no #{frame} in its string table" unless names.any? { |s| s.start_with?(frame) }
  inside = stacks.count { |path| path.any? { |s| s.start_with?(frame) } }
  problems << "#{thread}: #{frame} in #{inside} of #{stacks.size} samples" unless stacks.any? && inside * 2 > stacks.size
  want.each do |_, other|
    problems << "#{thread}: also has #{other}" if other != frame && names.any? { |s| s.start_with?(other) }
  end
end
if problems.empty?
  counts = threads.map { |t| "#{t['name']} #{t.dig('samples', 'data').size}" }
  puts "ok #{threads.size} threads (#{counts.join(', ')} samples), version #{meta['version']}"
else
  puts problems.uniq.first(10).join("; ")
  exit 1
end
