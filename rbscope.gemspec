# rbscope.gemspec: the rbscope gem: the in-process agent (a C extension) that `rbscope trace` and friends attach to.
require_relative "lib/rbscope/version"

Gem::Specification.new do |s|
  s.name = "rbscope"
  s.version = Rbscope::VERSION
  s.summary = "The in-process agent of rbscope: tracing, backtraces, GC stats, heap dumps and eval for a running Ruby"
  s.description = "Load it with require \"rbscope\" or RUBYOPT=-rrbscope; the rbscope command-line tool attaches " \
                  "to the process through a private Unix socket and traces method calls through a shared-memory ring."
  s.authors = ["rbscope developers"]
  s.license = "MIT"
  s.homepage = "https://example.invalid/rbscope"
  s.required_ruby_version = ">= 2.7"
  s.files = Dir["lib/**/*.rb", "ext/rbscope/*.{c,h,rb}", "src/agent/proto.{c,h}", "src/agent/ring.h", "src/agent/hist.h",
                "tracers/*.tracer", "LICENSE", "README.md"]
  s.extensions = ["ext/rbscope/extconf.rb"]
  s.require_paths = ["lib"]
end
