//! Command shells whose language is not bash's: berth cannot parse what
//! they run, so running one is opaque (POLICY.md, "Spelling does not
//! change meaning", point 2: auto-approval needs positive knowledge).
//! `-c`, `--commands`, `-e` give them a command line; without a script
//! file they read one from stdin; with a script file they run a program
//! berth cannot read either. Only asking for their help or version is
//! ordinary. (Bourne-family clones are shells in [`crate::wrapper::is_shell`]
//! and their `-c` scripts are parsed.)

use super::Facts;
use crate::arg::Arg;

/// One const per shell family, a why per entry.
const FOREIGN_SHELLS: &[&str] = &[
    "elvish",  // Elvish: `-c` runs a command line in its own language
    "nu",      // Nushell: `-c`/`--commands`
    "nushell", // the same, by its long name
    "xonsh",   // Python-based: `-c`
    "ysh",     // Oils' new language: `-c`
    "oil",     // YSH's earlier name
    "rc",      // Plan 9's shell: `-c`
    "es",      // the extensible shell, rc's descendant
    "ion",     // Redox's shell: `-c`
    "murex",   // `-c`
    "bb",      // babashka: `-e` runs Clojure that calls `shell`
    "nbb",     // the same on Node
    "scsh",    // Scheme shell
    "closh",   // Clojure shell
    "oh",      // `-c`
    "ngs",     // Next Generation Shell: `-e`
];

/// Whether `name` is a shell whose language berth does not parse.
pub(super) fn is_foreign_shell(name: &str) -> bool {
    FOREIGN_SHELLS.contains(&name)
}

/// Opaque unless the shell is only asked for its help or version.
pub(super) fn facts(name: &str, args: &[Arg]) -> Facts {
    let asks_itself = matches!(
        args,
        [only] if !only.dynamic
            && matches!(only.text.as_str(), "--version" | "-v" | "--help" | "-h" | "-version")
    );
    if asks_itself {
        Facts::default()
    } else {
        Facts::opaque(format!(
            "`{name}` runs a program in a language the policy does not parse"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opaque(line: &str) -> bool {
        let words: Vec<Arg> = line.split(' ').map(Arg::lit).collect();
        facts(words[0].text.as_str(), &words[1..]).opaque.is_some()
    }

    #[test]
    fn foreign_shells_run_unknown_programs() {
        for line in [
            "elvish -c x",
            "nu -c x",
            "nu --commands x",
            "xonsh -c x",
            "ysh -c x",
            "rc -c x",
            "es -c x",
            "ion -c x",
            "murex -c x",
            "bb -e x",
            "nu script.nu",
            "xonsh",
        ] {
            assert!(opaque(line), "{line}");
        }
        for line in ["nu --version", "xonsh --help", "elvish -version"] {
            assert!(!opaque(line), "{line}");
        }
        assert!(is_foreign_shell("nu") && !is_foreign_shell("bash"));
    }
}
