# rbscope.rb: the rbscope gem: loads the agent that the `rbscope` CLI attaches to (require "rbscope" or RUBYOPT=-rrbscope).
require "rbscope/version"
require "rbscope/rbscope"
require "rbscope/agent"
require "rbscope/probes"

module Rbscope
  # Let `rbscope eval` run code in this process (off unless RBSCOPE_ALLOW_EVAL=1 or this is called).
  def self.allow_eval!
    Agent.allow_eval = true
  end
end

Rbscope::Agent.start unless ENV["RBSCOPE_AGENT"] == "0"
