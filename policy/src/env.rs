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
];

/// Whether assigning `name` can change what runs or where it loads code.
pub fn is_dangerous_env(name: &str) -> bool {
    EXACT.contains(&name)
        || PREFIXES.iter().any(|p| name.starts_with(p))
        || (name.starts_with("CARGO_TARGET_")
            && (name.ends_with("_RUNNER") || name.ends_with("_LINKER")))
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
        ] {
            assert!(!is_dangerous_env(n), "{n}");
        }
    }
}
