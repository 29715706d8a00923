# preload.rb: the agent from boot, whatever starts the app: RUBYOPT=-r/usr/local/share/rbscope/preload (make install)
# or RUBYOPT=-r$(gem contents rbscope | grep preload.rb). Under `bundle exec` with a Gemfile that does not list
# rbscope, Bundler hides the gem from require; this file then finds it among the installed gems itself. If no agent
# loads (none installed for this Ruby, a build for another Ruby), it says so once on stderr and the app starts anyway.
module RbscopePreload
  # The installed rbscope gems for this Ruby, newest first: [lib, extension dir] of each.
  def self.installed
    dirs = [ENV["GEM_HOME"], *ENV.fetch("GEM_PATH", "").split(File::PATH_SEPARATOR)]
    dirs += Gem.path + [Gem.default_dir] if defined?(Gem)
    api = defined?(Gem) && Gem.respond_to?(:extension_api_version) ? Gem.extension_api_version : nil
    platform = defined?(Gem::Platform) ? Gem::Platform.local.to_s : nil
    found = dirs.compact.reject(&:empty?).uniq.flat_map do |dir|
      Dir.glob(File.join(dir, "gems", "rbscope-*", "lib", "rbscope.rb")).map do |file|
        lib = File.dirname(file)
        name = File.basename(File.dirname(lib))
        ext = api && platform ? File.join(dir, "extensions", platform, api, name) : nil
        [name.sub("rbscope-", ""), lib, ext]
      end
    end
    found.sort_by { |v, _, _| v.split(".").map(&:to_i) }.reverse.map { |_, lib, ext| [lib, ext] }
  end

  def self.load_agent
    require "rbscope"
  rescue LoadError
    # Beside this file (a gem's lib/rbscope/), or an installed gem Bundler keeps off the load path.
    here = File.expand_path("..", __dir__)
    candidates = File.exist?(File.join(here, "rbscope.rb")) ? [[here, nil]] : []
    (candidates + installed).each do |lib, ext|
      paths = [lib, ext].compact.select { |d| File.directory?(d) }
      $LOAD_PATH.unshift(*paths)
      begin
        require "rbscope"
        return
      rescue LoadError
        paths.each { |d| $LOAD_PATH.delete(d) }
      end
    end
    raise
  end

  begin
    load_agent
  rescue LoadError, StandardError => e
    # Once per process tree: forked workers and re-executed children inherit the mark.
    unless ENV["RBSCOPE_PRELOAD_WARNED"]
      warn "rbscope: the agent is not loaded (#{e.message}); the app runs without it"
      ENV["RBSCOPE_PRELOAD_WARNED"] = "1"
    end
  end
end
