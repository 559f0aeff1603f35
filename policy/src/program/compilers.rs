//! C and C++ compiler drivers (`gcc`, `cc`, `clang`, `g++`, …): options
//! that make the driver run a program other than its own tools or load
//! code into the compiler (`-wrapper`, `-fplugin=`, `-B`, `-specs=`,
//! `-fuse-ld=/path`, `-Xclang -load`), and response files (`@file`) whose
//! options the policy cannot see.

use super::Facts;
use crate::arg::Arg;

/// Options (as a whole word, or a prefix with the value attached) that run
/// a program or load code.
const CC_RUNS: &[(&str, &str)] = &[
    (
        "-wrapper",
        "runs every subprogram through a wrapper program",
    ),
    ("-fplugin", "loads a plugin into the compiler"),
    ("-fpass-plugin", "loads a pass plugin into the compiler"),
    ("-fplugin-arg", "configures a loaded plugin"),
    ("-iplugindir", "chooses where plugins are loaded from"),
    ("-B", "chooses where the driver finds the programs it runs"),
    ("-specs", "a specs file can name any program to run"),
    ("--specs", "a specs file can name any program to run"),
    ("-fuse-ld", "chooses the linker program"),
    ("--ld-path", "chooses the linker program"),
    (
        "-ccc-install-dir",
        "chooses where the driver finds its programs",
    ),
    (
        "--gcc-toolchain",
        "chooses the toolchain whose programs run",
    ),
    (
        "--gcc-install-dir",
        "chooses the toolchain whose programs run",
    ),
    (
        "-no-integrated-as",
        "runs an external assembler found by name",
    ),
    (
        "-fno-integrated-as",
        "runs an external assembler found by name",
    ),
    (
        "-Xclang",
        "passes options to the compiler itself (`-load` loads code)",
    ),
    ("-mllvm", "passes options to LLVM (`-load` loads code)"),
    (
        "-Wl,",
        "passes options to the linker (`-plugin` loads code)",
    ),
    ("-load", "loads code into the compiler"),
];

/// `-fuse-ld=NAME` with a plain name picks one of the toolchain's linkers.
const CC_PLAIN_LINKERS: &[&str] = &["bfd", "gold", "lld", "mold", "ld"];

pub(super) fn cc(name: &str, args: &[Arg]) -> Facts {
    for (i, a) in args.iter().enumerate() {
        if a.dynamic {
            if a.text.is_empty() || a.text.starts_with('-') || a.text.starts_with('@') {
                return Facts::opaque(format!("`{name}` with an option computed at run time"));
            }
            continue;
        }
        let t = a.text.as_str();
        if t.starts_with('@') && t.len() > 1 {
            return Facts::opaque(format!(
                "`{name} {t}` reads options from a file the policy does not see"
            ));
        }
        if let Some(ld) = t.strip_prefix("-fuse-ld=")
            && CC_PLAIN_LINKERS.contains(&ld)
        {
            continue;
        }
        // `-Wl,-O1,--as-needed` and friends name no program or plugin.
        if let Some(list) = t.strip_prefix("-Wl,")
            && list.split(',').all(|o| {
                !o.contains("plugin") && !o.contains("dynamic-linker") && !o.starts_with("-fuse")
            })
        {
            continue;
        }
        // `-Xlinker -plugin` / `-Xlinker --plugin=…` loads code into the linker.
        if t == "-Xlinker" {
            if args
                .get(i + 1)
                .is_some_and(|v| v.dynamic || v.text.contains("plugin"))
            {
                return Facts::opaque(format!("`{name} -Xlinker` loads a linker plugin"));
            }
            continue;
        }
        for (opt, why) in CC_RUNS {
            let hit = t == *opt
                || (t.starts_with(opt)
                    && (opt.ends_with(',')
                        || t[opt.len()..].starts_with('=')
                        || matches!(*opt, "-B" | "-fplugin-arg")));
            if hit {
                return Facts::opaque(format!("`{name} {opt}` {why}"));
            }
        }
    }
    Facts::default()
}

/// C and C++ compiler drivers, by name (`x86_64-linux-gnu-gcc-12`,
/// `clang++-17` included): the name without its trailing version
/// (digits, `.`, `-`), after its last `-`. Bytes, not chars: what is
/// trimmed and where it is cut are ASCII, and std's char searchers cost
/// more than the whole look at a name (every program not matched before
/// is asked).
pub(super) fn is_compiler_driver(name: &str) -> bool {
    let b = name.as_bytes();
    let mut end = b.len();
    while end > 0 && matches!(b[end - 1], b'0'..=b'9' | b'.' | b'-') {
        end -= 1;
    }
    let mut start = end;
    while start > 0 && b[start - 1] != b'-' {
        start -= 1;
    }
    matches!(
        &b[start..end],
        b"gcc"
            | b"g++"
            | b"cc"
            | b"c++"
            | b"clang"
            | b"clang++"
            | b"cpp"
            | b"gfortran"
            | b"tcc"
            | b"icx"
            | b"icpx"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`is_compiler_driver`] as it was, by std's char searchers.
    fn is_compiler_driver_by_chars(name: &str) -> bool {
        let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
        let base = base.rsplit('-').next().unwrap_or(base);
        [
            "gcc", "g++", "cc", "c++", "clang", "clang++", "cpp", "gfortran", "tcc", "icx", "icpx",
        ]
        .contains(&base)
    }

    #[test]
    fn the_byte_reading_names_the_same_drivers() {
        crate::short_strings::each(b"gc+-.1x", 6, |name| {
            assert_eq!(
                is_compiler_driver(name),
                is_compiler_driver_by_chars(name),
                "{name:?}"
            );
        });
        for name in [
            "x86_64-linux-gnu-gcc-12",
            "clang++-17",
            "gfortran",
            "icpx.2",
            "arm-none-eabi-g++",
            "tcc-",
            "\u{e9}-cc",
            "cc-\u{e9}",
            "clang-\u{e9}1",
            "git",
            "",
        ] {
            assert_eq!(
                is_compiler_driver(name),
                is_compiler_driver_by_chars(name),
                "{name:?}"
            );
        }
        assert!(is_compiler_driver("x86_64-linux-gnu-gcc-12"));
        assert!(!is_compiler_driver("npm"));
    }
}
