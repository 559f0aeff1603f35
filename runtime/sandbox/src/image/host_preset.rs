//! Toolchain presets of a recipe's `[[host]]` entries: `preset = "rust"`,
//! `"python"` or `"node"` names a toolchain of this machine instead of its
//! files. No registry is reachable, so a project's toolchain image is built
//! from what this host has; which files a toolchain needs (a compiler's
//! libraries, its standard library, the C linker `cargo` calls) is knowledge
//! a user should not have to write out path by path.
//!
//! A preset is found the way a shell finds it — its program (`rustc`,
//! `python3`, `node`) on `PATH`, or the one the entry's `path` names — and
//! asked where its files are (`rustc --print sysroot`, Python's
//! `sysconfig`, node's `process.execPath`, gcc's `-print-file-name`). It
//! expands into ordinary host inputs and links at build time; the image's
//! tag hashes every resolved file, so a toolchain upgrade builds a new image.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use super::ImageError;
use super::recipe::HostInput;

/// Where a preset links its commands in the image, when they are elsewhere:
/// the first directory of the default recipe's `PATH`.
pub const PRESET_BIN: &str = "/usr/local/bin";

/// A toolchain a `[[host]]` entry names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HostPreset {
    /// The host target's `rustc`, `cargo`, `rustdoc` and `rust-std`, with
    /// the C linker `cargo` calls (gcc, binutils' `ld`, libc's development
    /// files).
    Rust,
    /// A Python interpreter and its standard library (less its own tests).
    Python,
    /// `node`, with `npm` and `npx` when they sit beside it.
    Node,
}

/// What a preset expands into on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresetFiles {
    /// Host files and directories, as `[[host]]` path entries name them.
    pub host: Vec<HostInput>,
    /// Links made in the image, `(path, target)`: the toolchain's commands
    /// in [`PRESET_BIN`] when they live off `PATH`.
    pub links: Vec<(String, String)>,
}

/// Where this host's Rust toolchain and C linker are.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RustHost {
    /// `rustc --print sysroot`.
    sysroot: String,
    /// `rustc -vV`'s `host:` (the target triple).
    target: String,
    /// The compiler's shared libraries in `<sysroot>/lib` (librustc_driver,
    /// libLLVM), file names.
    compiler_libs: Vec<String>,
    /// The C compiler driver and the linker, host paths.
    cc: String,
    ld: String,
    /// gcc's own directory (collect2, crtbeginS.o, libgcc.a).
    gcc_dir: String,
    /// libc's development files (Scrt1.o, libc.so).
    libc_dir: String,
}

/// Where this host's Python is.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PythonHost {
    /// `sys.executable`.
    interpreter: String,
    /// `sysconfig.get_paths()['stdlib']`.
    stdlib: String,
}

/// Where this host's node is.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NodeHost {
    /// `process.execPath`.
    node: String,
    /// `<prefix>/lib/node_modules/npm`, when there is one.
    npm: Option<String>,
}

/// One host input of a preset, and the package that provides it (for the
/// message when it is missing).
struct Wanted {
    input: HostInput,
    package: &'static str,
}

fn wanted(path: impl Into<PathBuf>, libraries: bool, package: &'static str) -> Wanted {
    Wanted {
        input: HostInput {
            path: path.into(),
            libraries,
            exclude: Vec::new(),
        },
        package,
    }
}

impl Wanted {
    fn excluding(mut self, names: &[&str]) -> Wanted {
        self.input.exclude = names.iter().map(|n| n.to_string()).collect();
        self
    }
}

/// Python's standard library less its own tests, caches, what needs a
/// display, and the packages installed into it.
const PYTHON_STDLIB_EXCLUDE: &[&str] = &[
    "test",
    "__pycache__",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "dist-packages",
    "site-packages",
];

/// Directories already on the default recipe's `PATH`: a command there
/// needs no link.
const ON_PATH: &[&str] = &["/usr/local/bin", "/usr/bin", "/bin"];

impl HostPreset {
    pub fn name(self) -> &'static str {
        match self {
            HostPreset::Rust => "rust",
            HostPreset::Python => "python",
            HostPreset::Node => "node",
        }
    }

    /// The program a preset asks where its files are.
    pub fn program(self) -> &'static str {
        match self {
            HostPreset::Rust => "rustc",
            HostPreset::Python => "python3",
            HostPreset::Node => "node",
        }
    }

    /// Finds the toolchain on this host — through `program`, or its
    /// [`program`](Self::program) on `PATH` — and lists its files. Blocking:
    /// runs the toolchain's own programs.
    pub fn files(self, program: Option<&Path>) -> Result<PresetFiles, ImageError> {
        let program = match program {
            Some(p) => p.to_path_buf(),
            None => on_path(self.program()).ok_or_else(|| {
                self.error(format!(
                    "no `{}` on PATH; install the toolchain, or name its program with `path`",
                    self.program()
                ))
            })?,
        };
        let (wanted, links) = match self {
            HostPreset::Rust => {
                let host = self.find_rust(&program)?;
                (rust_files(&host), rust_links(&host))
            }
            HostPreset::Python => {
                let host = self.find_python(&program)?;
                (
                    python_files(&host),
                    command_links(&[("python3", &host.interpreter)]),
                )
            }
            HostPreset::Node => {
                let host = self.find_node(&program)?;
                (node_files(&host), node_links(&host))
            }
        };
        if let Some(missing) = wanted.iter().find(|w| !exists(&w.input.path)) {
            return Err(self.error(format!(
                "{} is missing (install {})",
                missing.input.path.display(),
                missing.package
            )));
        }
        Ok(PresetFiles {
            host: wanted.into_iter().map(|w| w.input).collect(),
            links,
        })
    }

    fn error(self, message: String) -> ImageError {
        ImageError::Preset {
            preset: self.name(),
            message,
        }
    }

    /// Runs `program args`, which must succeed; its stdout, trimmed.
    fn ask(self, program: &Path, args: &[&str]) -> Result<String, ImageError> {
        let out = Command::new(program)
            .args(args)
            .env("LC_ALL", "C")
            .output()
            .map_err(|source| ImageError::Io {
                op: "run a toolchain's program",
                path: program.to_path_buf(),
                source,
            })?;
        if !out.status.success() {
            return Err(self.error(format!(
                "`{} {}` failed ({}): {}",
                program.display(),
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    fn find_rust(self, rustc: &Path) -> Result<RustHost, ImageError> {
        let sysroot = self.ask(rustc, &["--print", "sysroot"])?;
        let target = self
            .ask(rustc, &["-vV"])?
            .lines()
            .find_map(|l| l.strip_prefix("host: "))
            .map(str::to_string)
            .ok_or_else(|| self.error("`rustc -vV` names no host target".to_string()))?;
        let lib = Path::new(&sysroot).join("lib");
        let mut compiler_libs: Vec<String> = std::fs::read_dir(&lib)
            .map_err(|source| ImageError::Io {
                op: "list the Rust toolchain's libraries",
                path: lib.clone(),
                source,
            })?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| is_compiler_lib(n))
            .collect();
        compiler_libs.sort();
        let cc = on_path("cc").ok_or_else(|| {
            self.error("no `cc` on PATH: cargo links through it (install gcc)".into())
        })?;
        let ld = on_path("ld").ok_or_else(|| {
            self.error("no `ld` on PATH: gcc links with it (install binutils)".into())
        })?;
        let libgcc = self.ask(&cc, &["-print-libgcc-file-name"])?;
        let gcc_dir = parent_of(&libgcc)
            .ok_or_else(|| self.error(format!("`cc -print-libgcc-file-name` said {libgcc:?}")))?;
        // gcc names a file it cannot find by its bare name.
        let scrt1 = self.ask(&cc, &["-print-file-name=Scrt1.o"])?;
        let libc_dir = parent_of(&scrt1)
            .filter(|_| scrt1 != "Scrt1.o")
            .ok_or_else(|| self.error("gcc finds no Scrt1.o (install libc6-dev)".to_string()))?;
        Ok(RustHost {
            sysroot,
            target,
            compiler_libs,
            cc: cc.to_string_lossy().into_owned(),
            ld: ld.to_string_lossy().into_owned(),
            gcc_dir,
            libc_dir,
        })
    }

    fn find_python(self, python: &Path) -> Result<PythonHost, ImageError> {
        let out = self.ask(
            python,
            &[
                "-c",
                "import sys, sysconfig; print(sys.executable); print(sysconfig.get_paths()['stdlib'])",
            ],
        )?;
        let mut lines = out.lines();
        match (lines.next(), lines.next()) {
            (Some(interpreter), Some(stdlib)) if !interpreter.is_empty() => Ok(PythonHost {
                interpreter: interpreter.to_string(),
                stdlib: stdlib.to_string(),
            }),
            _ => Err(self.error(format!(
                "{} did not name its interpreter and standard library: {out:?}",
                python.display()
            ))),
        }
    }

    fn find_node(self, node: &Path) -> Result<NodeHost, ImageError> {
        let exec_path = self.ask(node, &["-p", "process.execPath"])?;
        // `<prefix>/bin/node` beside `<prefix>/lib/node_modules/npm`.
        let npm = Path::new(&exec_path)
            .parent()
            .and_then(Path::parent)
            .map(|prefix| prefix.join("lib/node_modules/npm"))
            .filter(|p| p.join("bin/npm-cli.js").is_file())
            .map(|p| p.to_string_lossy().into_owned());
        Ok(NodeHost {
            node: exec_path,
            npm,
        })
    }
}

/// librustc_driver and libLLVM: what `rustc` loads from `<sysroot>/lib`.
fn is_compiler_lib(name: &str) -> bool {
    (name.starts_with("librustc_driver-") || name.starts_with("libLLVM")) && name.contains(".so")
}

/// The host target's `rustc`, `cargo`, `rustdoc` (`cargo test` runs
/// doctests), the compiler's libraries and `rust-std`, the linker `rustc`
/// runs (`rust-lld` behind gcc's `-fuse-ld=lld`), and gcc, binutils' `ld`
/// and libc's development files for the link. No docs, sources or analysis
/// data.
fn rust_files(h: &RustHost) -> Vec<Wanted> {
    let toolchain = "the Rust toolchain (rustup)";
    let sysroot = &h.sysroot;
    let mut files = vec![
        wanted(format!("{sysroot}/bin/rustc"), true, toolchain),
        wanted(format!("{sysroot}/bin/cargo"), true, "cargo"),
        wanted(format!("{sysroot}/bin/rustdoc"), true, toolchain),
    ];
    files.extend(
        h.compiler_libs
            .iter()
            .map(|lib| wanted(format!("{sysroot}/lib/{lib}"), true, toolchain)),
    );
    files.extend([
        // rust-std, less the sanitizer runtimes.
        wanted(
            format!("{sysroot}/lib/rustlib/{}/lib", h.target),
            false,
            "rust-std (rustup component add rust-std)",
        )
        .excluding(&["librustc-stable_rt.*"]),
        wanted(
            format!("{sysroot}/lib/rustlib/{}/bin", h.target),
            true,
            toolchain,
        )
        .excluding(&["wasm-component-ld", "rust-objcopy"]),
        wanted(&h.cc, true, "gcc"),
        wanted(&h.ld, true, "binutils"),
    ]);
    // gcc's driver files (with their libraries) and its startup files.
    let gcc = [
        ("collect2", true),
        ("lto-wrapper", true),
        ("liblto_plugin.so", true),
        ("crtbegin.o", false),
        ("crtbeginS.o", false),
        ("crtend.o", false),
        ("crtendS.o", false),
        ("libgcc.a", false),
        ("libgcc_eh.a", false),
        ("libgcc_s.so", false),
    ];
    files.extend(
        gcc.iter()
            .map(|(file, libraries)| wanted(format!("{}/{file}", h.gcc_dir), *libraries, "gcc")),
    );
    // libc6-dev: the startup files and the link-time libraries std names;
    // then libm.so's script names libmvec, and the link needs libgcc_s.
    let libc = [
        "crt1.o",
        "Scrt1.o",
        "crti.o",
        "crtn.o",
        "libc.so",
        "libc_nonshared.a",
        "libm.so",
        "libdl.a",
        "libpthread.a",
        "librt.a",
        "libutil.a",
    ];
    files.extend(
        libc.iter()
            .map(|file| wanted(format!("{}/{file}", h.libc_dir), false, "libc6-dev")),
    );
    files.extend([
        wanted(format!("{}/libmvec.so.1", h.libc_dir), false, "libc6"),
        wanted(format!("{}/libgcc_s.so.1", h.libc_dir), false, "libgcc-s1"),
    ]);
    files
}

/// `rustc`, `cargo` and `rustdoc` on `PATH` in the image.
fn rust_links(h: &RustHost) -> Vec<(String, String)> {
    let commands: Vec<(&str, String)> = ["rustc", "cargo", "rustdoc"]
        .iter()
        .map(|c| (*c, format!("{}/bin/{c}", h.sysroot)))
        .collect();
    command_links(
        &commands
            .iter()
            .map(|(c, t)| (*c, t.as_str()))
            .collect::<Vec<_>>(),
    )
}

fn python_files(h: &PythonHost) -> Vec<Wanted> {
    vec![
        wanted(&h.interpreter, true, "python3"),
        wanted(&h.stdlib, true, "python3").excluding(PYTHON_STDLIB_EXCLUDE),
    ]
}

fn node_files(h: &NodeHost) -> Vec<Wanted> {
    let mut files = vec![wanted(&h.node, true, "nodejs")];
    if let Some(npm) = &h.npm {
        files.push(wanted(npm, false, "npm"));
    }
    files
}

fn node_links(h: &NodeHost) -> Vec<(String, String)> {
    let mut commands = vec![("node", h.node.clone())];
    if let Some(npm) = &h.npm {
        commands.push(("npm", format!("{npm}/bin/npm-cli.js")));
        commands.push(("npx", format!("{npm}/bin/npx-cli.js")));
    }
    command_links(
        &commands
            .iter()
            .map(|(c, t)| (*c, t.as_str()))
            .collect::<Vec<_>>(),
    )
}

/// `PRESET_BIN/<command>` → its file, for each command not already in a
/// directory on `PATH` under its own name.
fn command_links(commands: &[(&str, &str)]) -> Vec<(String, String)> {
    commands
        .iter()
        .filter(|(command, target)| {
            !ON_PATH
                .iter()
                .any(|dir| *target == format!("{dir}/{command}"))
        })
        .map(|(command, target)| (format!("{PRESET_BIN}/{command}"), target.to_string()))
        .collect()
}

fn parent_of(path: &str) -> Option<String> {
    let parent = Path::new(path).parent()?;
    (parent.is_absolute() && parent != Path::new("/")).then(|| {
        // gcc's answers go through `..`: the resolver wants them clean.
        std::fs::canonicalize(parent)
            .unwrap_or_else(|_| parent.to_path_buf())
            .to_string_lossy()
            .into_owned()
    })
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// The first executable file named `program` in a directory of this
/// process's `PATH`.
fn on_path(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn paths(files: &[Wanted]) -> Vec<String> {
        files
            .iter()
            .map(|w| w.input.path.to_string_lossy().into_owned())
            .collect()
    }

    fn rust_host(sysroot: &str) -> RustHost {
        RustHost {
            sysroot: sysroot.into(),
            target: "x86_64-unknown-linux-gnu".into(),
            compiler_libs: vec![
                "libLLVM.so.20.1-rust-1.90.0-stable".into(),
                "librustc_driver-abc.so".into(),
            ],
            cc: "/usr/bin/cc".into(),
            ld: "/usr/bin/ld".into(),
            gcc_dir: "/usr/lib/gcc/x86_64-linux-gnu/12".into(),
            libc_dir: "/usr/lib/x86_64-linux-gnu".into(),
        }
    }

    #[test]
    fn rust_takes_the_compiler_std_and_the_c_linker_and_leaves_docs_and_sources() {
        let s = "/root/.rustup/toolchains/stable-x86_64-unknown-linux-gnu";
        let files = rust_files(&rust_host(s));
        let got = paths(&files);
        let t = "x86_64-unknown-linux-gnu";
        let cases: &[(String, bool)] = &[
            (format!("{s}/bin/rustc"), true),
            (format!("{s}/bin/cargo"), true),
            (format!("{s}/bin/rustdoc"), true),
            (format!("{s}/lib/librustc_driver-abc.so"), true),
            (format!("{s}/lib/libLLVM.so.20.1-rust-1.90.0-stable"), true),
            (format!("{s}/lib/rustlib/{t}/lib"), true),
            (format!("{s}/lib/rustlib/{t}/bin"), true),
            ("/usr/bin/cc".into(), true),
            ("/usr/bin/ld".into(), true),
            ("/usr/lib/gcc/x86_64-linux-gnu/12/collect2".into(), true),
            ("/usr/lib/gcc/x86_64-linux-gnu/12/crtbeginS.o".into(), true),
            ("/usr/lib/x86_64-linux-gnu/Scrt1.o".into(), true),
            ("/usr/lib/x86_64-linux-gnu/libc.so".into(), true),
            // Never the whole sysroot, its docs, sources or other tools.
            (s.to_string(), false),
            (format!("{s}/lib"), false),
            (format!("{s}/share"), false),
            (format!("{s}/lib/rustlib/src"), false),
            (format!("{s}/bin/rustfmt"), false),
            (format!("{s}/bin/cargo-clippy"), false),
        ];
        for (path, want) in cases {
            assert_eq!(got.contains(path), *want, "{path}");
        }
        // The compiler and its linker with their libraries, std as is, less
        // the sanitizer runtimes.
        let by_path = |p: String| {
            files
                .iter()
                .find(|w| w.input.path == Path::new(&p))
                .unwrap()
        };
        assert!(by_path(format!("{s}/bin/rustc")).input.libraries);
        let std = by_path(format!("{s}/lib/rustlib/{t}/lib"));
        assert!(!std.input.libraries);
        assert!(std.input.excludes("librustc-stable_rt.asan.a"));
        assert!(!std.input.excludes("libstd-abc.rlib"));
        assert_eq!(
            by_path("/usr/lib/x86_64-linux-gnu/Scrt1.o".into()).package,
            "libc6-dev"
        );
        assert_eq!(
            rust_links(&rust_host(s)),
            ["rustc", "cargo", "rustdoc"]
                .map(|c| (format!("/usr/local/bin/{c}"), format!("{s}/bin/{c}")))
        );
        // A toolchain installed in /usr needs no links.
        assert_eq!(rust_links(&rust_host("/usr")), vec![]);
    }

    #[test]
    fn the_compiler_libraries_are_told_from_the_rest_of_lib() {
        let cases = [
            ("librustc_driver-1234.so", true),
            ("libLLVM.so.20.1-rust-1.90.0-stable", true),
            ("libLLVM-17.so", true),
            ("rustlib", false),
            ("libc.so.6", false),
            ("librustc_driver-1234.rlib", false),
        ];
        for (name, want) in cases {
            assert_eq!(is_compiler_lib(name), want, "{name}");
        }
    }

    #[test]
    fn python_and_node_take_their_program_and_library() {
        let py = python_files(&PythonHost {
            interpreter: "/root/.pyenv/versions/3.11.7/bin/python3".into(),
            stdlib: "/root/.pyenv/versions/3.11.7/lib/python3.11".into(),
        });
        assert_eq!(
            paths(&py),
            [
                "/root/.pyenv/versions/3.11.7/bin/python3",
                "/root/.pyenv/versions/3.11.7/lib/python3.11"
            ]
        );
        assert!(py.iter().all(|w| w.input.libraries));
        assert!(py[1].input.excludes("test") && py[1].input.excludes("site-packages"));
        assert!(!py[1].input.excludes("json"));

        let node = NodeHost {
            node: "/usr/bin/node".into(),
            npm: Some("/usr/lib/node_modules/npm".into()),
        };
        assert_eq!(
            paths(&node_files(&node)),
            ["/usr/bin/node", "/usr/lib/node_modules/npm"]
        );
        assert_eq!(
            node_links(&node),
            vec![
                (
                    "/usr/local/bin/npm".to_string(),
                    "/usr/lib/node_modules/npm/bin/npm-cli.js".to_string()
                ),
                (
                    "/usr/local/bin/npx".to_string(),
                    "/usr/lib/node_modules/npm/bin/npx-cli.js".to_string()
                ),
            ]
        );
    }

    /// This host's toolchains, as the presets find them: every file there,
    /// every link to a file of the preset. CI's host has Rust with gcc and
    /// Python: a skip there would hide a failure.
    #[test]
    fn this_hosts_toolchains_are_found_with_every_file() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        for (preset, program, required) in [
            (HostPreset::Rust, None, ci),
            (HostPreset::Python, Some(Path::new("/usr/bin/python3")), ci),
            (HostPreset::Node, None, false),
        ] {
            let files = match preset.files(program) {
                Ok(files) => files,
                Err(e) if !required => {
                    eprintln!("skipping the {} preset: {e}", preset.name());
                    continue;
                }
                Err(e) => panic!("{e}"),
            };
            assert!(!files.host.is_empty());
            for input in &files.host {
                assert!(exists(&input.path), "{}", input.path.display());
            }
            for (link, target) in &files.links {
                assert!(link.starts_with("/usr/local/bin/"), "{link}");
                assert!(Path::new(target).is_file(), "{link} -> {target}");
            }
            if preset == HostPreset::Rust {
                let names: Vec<_> = files.links.iter().map(|(l, _)| l.as_str()).collect();
                assert_eq!(
                    names,
                    ["rustc", "cargo", "rustdoc"].map(|c| format!("/usr/local/bin/{c}")),
                );
            }
        }
        let err = HostPreset::Rust
            .files(Some(Path::new("/nonexistent/rustc")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent/rustc"), "{err}");
    }

    #[test]
    fn commands_off_path_are_linked_onto_it() {
        let cases: &[(&str, &str, bool)] = &[
            ("python3", "/usr/bin/python3", false),
            ("python3", "/usr/local/bin/python3", false),
            ("python3", "/root/.pyenv/versions/3.11.7/bin/python3", true),
            // On PATH, but under another name.
            ("python3", "/usr/bin/python3.11", true),
            ("node", "/opt/node/bin/node", true),
        ];
        for (command, target, linked) in cases {
            let links = command_links(&[(command, target)]);
            assert_eq!(!links.is_empty(), *linked, "{target}");
            if *linked {
                assert_eq!(
                    links,
                    vec![(format!("/usr/local/bin/{command}"), target.to_string())]
                );
            }
        }
    }
}
