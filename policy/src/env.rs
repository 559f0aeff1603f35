//! Environment variables that change what runs or where code is loaded from.
//!
//! An assignment to one of them (`PATH=/tmp/evil ls`, `export LD_PRELOAD=…`,
//! `env GIT_SSH_COMMAND=… git fetch`) makes the segment opaque: the allowed
//! program is no longer what runs.

/// Exact names.
const EXACT: &[&str] = &[
    "PATH",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "LD_DEBUG_OUTPUT",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "PS4",
    "IFS",
    "CDPATH",
    "SHELLOPTS",
    "BASHOPTS",
    "GLOBIGNORE",
    "BASH_LOADABLES_PATH",
    // bash's command hash and aliases as arrays: `BASH_CMDS[ls]=/bin/rm`
    // makes `ls` run `rm`; `EXECIGNORE` hides programs from the PATH search.
    "BASH_CMDS",
    "BASH_ALIASES",
    "EXECIGNORE",
    // The file bash writes its history to (`history -w`, `history -a`):
    // `HISTFILE=~/.bashrc history -w` writes a startup file unseen.
    "HISTFILE",
    "ZDOTDIR",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "PYTHONINSPECT",
    "PYTHONWARNINGS",
    "PYTHONBREAKPOINT",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_EXEC_PATH",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_ASKPASS",
    "GIT_PROXY_COMMAND",
    "GIT_TEMPLATE_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_ALLOW_PROTOCOL", // `ext::` remotes run a command named in the URL
    "PAGER",
    "MANPAGER",
    "SYSTEMD_PAGER",
    "EDITOR",
    "VISUAL",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "BROWSER",
    "LESSOPEN",
    "LESSCLOSE",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTC",
    "RUSTDOC",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "CARGO_HOME",
    "CARGO_ENCODED_RUSTFLAGS",
    "GOFLAGS",
    "GOTOOLCHAIN",
    "GOENV",
    "CC",
    "CXX",
    "LD",
    "AR",
    "CPP",
    "PKG_CONFIG",
    "SHELL",
    "MAKESHELL",
    "MAKEFLAGS",
    "HOME",
    "XDG_CONFIG_HOME",
    "GCONV_PATH",
    "HOSTALIASES",
    "TERMINFO",
    "NLSPATH",
    "LOCPATH",
    "PROFILE_D",
    "BASH_XTRACEFD",
    "EXECIGNORE",
    "FPATH",
    "PERL_MB_OPT",
    "PERL_MM_OPT",
    "PYTHONEXECUTABLE",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "NVM_DIR",
    "RBENV_ROOT",
    "PYENV_ROOT",
    "GEM_HOME",
    "GEM_PATH",
    "BUNDLE_GEMFILE",
    "DOTNET_STARTUP_HOOKS",
    "CORECLR_PROFILER_PATH",
    "CLASSPATH",
    "MAVEN_OPTS",
    "GRADLE_OPTS",
    "SBT_OPTS",
    "ANT_OPTS",
    "DENO_DIR",
    "CGO_CFLAGS",
    "CGO_CXXFLAGS",
    "CGO_CPPFLAGS",
    "CGO_LDFLAGS",
    "CGO_FFLAGS",
    // Added with the amendment's point 4: each is read by a program to find
    // code, options or programs to run.
    "TAR_OPTIONS",         // tar options: `--to-command`, `--use-compress-program`
    "MAKEFILES",           // makefiles make reads first (recipes run)
    "MFLAGS",              // make options (`--eval`, `-f`)
    "GNUMAKEFLAGS",        // the same, GNU make only
    "RSYNC_RSH",           // the remote shell rsync runs
    "RSYNC_CONNECT_PROG",  // a program rsync runs to connect
    "RIPGREP_CONFIG_PATH", // rg options (`--pre` runs a program)
    "GIT_COMMON_DIR",      // where git finds config and hooks
    "FCEDIT",              // the editor `fc` runs
    "SUDO_EDITOR",         // the editor `sudoedit` runs
    "KUBE_EDITOR",         // the editor `kubectl edit` runs
    "MANOPT",              // man options (`-P pager`, `-H browser`)
    "LESS",                // less options (`+!cmd` runs a command)
    "LESSKEYIN",           // less key bindings source
    "VIMINIT",             // Ex commands vim runs at start (`:!cmd`)
    "EXINIT",              // the same for ex/vi
    "DOCKER_HOST",         // the engine that runs `docker`'s containers: maybe another machine's
    "CONTAINER_HOST",      // the same for podman
    "PHPRC",               // php.ini (`auto_prepend_file` runs code)
    "PHP_INI_SCAN_DIR",    // more php ini files
    "TCLLIBPATH",          // where tclsh loads packages from
    "JULIA_LOAD_PATH",     // where julia loads modules from
    "R_PROFILE",           // R code run at start
    "R_PROFILE_USER",      // the same, per user
    "NODE_REPL_EXTERNAL_MODULE", // a module node runs instead of its REPL
    "OPENSSL_CONF",        // openssl config (loads engines: shared objects)
    "OPENSSL_ENGINES",     // where openssl loads engines from
    "OPENSSL_MODULES",     // where openssl loads providers from
    "DOCKER_CONFIG",       // docker config (credential helpers run programs)
    "KUBECONFIG",          // kube config (exec credential plugins run programs)
    "AWS_CONFIG_FILE",     // aws config (`credential_process` runs a program)
    "GOROOT",              // where go finds its tools
    "JAVA_HOME",           // the java that build tools run
    "RUSTUP_TOOLCHAIN",    // the toolchain rustup runs (may be a linked path)
    "RUSTUP_HOME",         // where rustup finds toolchains
    "CMAKE_TOOLCHAIN_FILE", // a cmake script cmake runs
    "CCACHE_PREFIX",       // a program ccache runs the compiler through
    "FZF_DEFAULT_COMMAND", // the command fzf runs for its input
    "FZF_DEFAULT_OPTS",    // fzf options (`--preview` runs a command)
    "HGRCPATH",            // mercurial config (hooks run programs)
    "CFLAGS",              // compiler options (`-wrapper`, `-fplugin=`)
    "CXXFLAGS",            // the same for C++
    "CPPFLAGS",            // the same for the preprocessor
    "LDFLAGS",             // linker options (`-Wl,-plugin`, `-fuse-ld=`)
    "PYTEST_ADDOPTS", // pytest options (`-p plugin` imports a module, `--rootdir`, `-c` config)
    "PYTEST_PLUGINS", // modules pytest imports as plugins
    "JDK_JAVA_OPTIONS", // the `java` launcher's options (`-javaagent:` runs code)
    "JAVA_OPTS",      // options launcher scripts (gradlew, catalina.sh) pass to java
    "GLIBC_TUNABLES", // the loader's tunables (read by every program, setuid ones too)
    "PIP_CONFIG_FILE", // pip's config (`index-url`, `find-links`: where installed code comes from)
    "CARGO_BUILD_RUSTFLAGS", // rustc options (`-C linker=`, `-Z` plugins)
    "CARGO_BUILD_RUSTDOCFLAGS",
    "YARN_RC_FILENAME", // the yarnrc yarn reads (`yarnPath` runs a script)
    "YARN_YARN_PATH",   // `yarnPath` itself: the script yarn runs instead of itself
    "EMACSLOADPATH",    // where emacs loads lisp from
    "R_LIBS",           // where R loads packages from
    "R_LIBS_USER",
    "R_LIBS_SITE",
    "BUNDLE_PATH", // where bundler loads gems from
    "GNUPGHOME",   // gpg's config (`pinentry-program`, `exec-path`)
    "CVSEDITOR",   // (no `_EDITOR` suffix)
    "TERMINAL",    // the terminal program launchers run
];

/// Name prefixes.
const PREFIXES: &[&str] = &[
    "LD_",
    "DYLD_",
    "GIT_CONFIG",
    "GIT_SSH",
    "BASH_FUNC_",
    "NPM_CONFIG_",
    "npm_config_",
    "CARGO_BUILD_RUSTC",
    "CARGO_CREDENTIAL_",
    "LUA_INIT",    // lua code run at start (`LUA_INIT_5_4` too)
    "LUA_PATH",    // where lua loads modules from
    "LUA_CPATH",   // where lua loads C modules from
    "SSH_ASKPASS", // `SSH_ASKPASS_REQUIRE` forces the askpass program
];

/// Name suffixes: a tool's own pager, editor, remote shell or rustc options
/// (`GH_PAGER`, `BAT_PAGER`, `AWS_PAGER`, `HGEDITOR`, `SVN_EDITOR`,
/// `CVS_RSH`, `CARGO_TARGET_<triple>_RUSTFLAGS`).
const SUFFIXES: &[&str] = &["PAGER", "EDITOR", "_RSH", "_RUSTFLAGS"];

/// Whether assigning `name` can change what runs or where it loads code.
pub fn is_dangerous_env(name: &str) -> bool {
    EXACT.contains(&name)
        || PREFIXES.iter().any(|p| name.starts_with(p))
        || (name.starts_with("CARGO_TARGET_")
            && (name.ends_with("_RUNNER") || name.ends_with("_LINKER")))
        // `CMAKE_<LANG>_COMPILER_LAUNCHER`: a program cmake runs the compiler through.
        || (name.starts_with("CMAKE_") && name.ends_with("_LAUNCHER"))
        || SUFFIXES.iter().any(|s| name.ends_with(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        for n in [
            "PATH",
            "LD_PRELOAD",
            "GIT_CONFIG_GLOBAL",
            "GIT_SSH_COMMAND",
            "NODE_OPTIONS",
            "npm_config_script_shell",
            "BASH_FUNC_ls%%",
            "DYLD_INSERT_LIBRARIES",
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER",
            "CDPATH",
            "PS4",
            "TAR_OPTIONS",
            "MAKEFLAGS",
            "MAKEFILES",
            "RSYNC_RSH",
            "RIPGREP_CONFIG_PATH",
            "LUA_INIT",
            "LUA_INIT_5_4",
            "GIT_COMMON_DIR",
            "GIT_ASKPASS",
            "SSH_ASKPASS",
            "LESSOPEN",
            "LESSCLOSE",
            "BROWSER",
            "PYTHONSTARTUP",
            "PERL5OPT",
            "RUBYOPT",
            "GIT_EXEC_PATH",
            "EDITOR",
            "VISUAL",
            "GIT_EDITOR",
            "PAGER",
            "BASH_ENV",
            "ENV",
            "PROMPT_COMMAND",
            "IFS",
            "GH_PAGER",
            "BAT_PAGER",
            "DELTA_PAGER",
            "AWS_PAGER",
            "HGEDITOR",
            "GH_EDITOR",
            "CVS_RSH",
            "CARGO_BUILD_RUSTFLAGS",
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS",
            "YARN_RC_FILENAME",
            "GNUPGHOME",
            "HISTFILE",
            "BASH_CMDS",
            "BASH_ALIASES",
            "EXECIGNORE",
        ] {
            assert!(is_dangerous_env(n), "{n}");
        }
        for n in [
            "NODE_ENV",
            "RUST_LOG",
            "CI",
            "DEBUG",
            "LANG",
            "TZ",
            "RUST_BACKTRACE",
            "FOO",
            "CGO_ENABLED",
            "CARGO_TARGET_DIR",
            "PIP_NO_CACHE_DIR",
            "CARGO_BUILD_JOBS",
            "PAGER_WIDTH",
        ] {
            assert!(!is_dangerous_env(n), "{n}");
        }
    }
}
