# inject.rb: what `rbscope ... --inject` loads in a process that never required the agent, in a Ruby thread of its
# own that a postponed job started (src/inject/boot/boot.c): the load path it was given in $rbscope_inject
# ("lib\next\nuid\npid"), the agent, and one line on stderr saying who loaded it and when. Never raises into the app:
# a failure is that one line, and the exception ends only this thread.
lib, ext, uid, pid = $rbscope_inject.to_s.split("\n")
$rbscope_inject = nil
[ext, lib].each { |d| $LOAD_PATH.unshift(d) if d && !d.empty? && !$LOAD_PATH.include?(d) }
begin
  require "rbscope"
  $stderr.puts "rbscope: agent loaded into process #{Process.pid} by rbscope --inject (uid #{uid}, pid #{pid}) at #{Time.now}"
rescue Exception => e # rubocop:disable Lint/RescueException -- report anything, raise nothing into the app
  $stderr.puts "rbscope: --inject: the agent did not load: #{e.class}: #{e.message}"
  raise
end
