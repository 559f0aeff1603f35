//! Link settings of berth's binaries.
//!
//! `-z pack-relative-relocs`: the relative relocations (a PIE's pointers in
//! its read-only-after-start data: vtables, tables of `&str`, …) are kept
//! as DT_RELR bitmaps, not one 24-byte `Elf64_Rela` each. `berth` has about
//! 28,000 of them: the table the loader reads at every start went from
//! 660 KB to 8 KB, and a one-shot `berth exec` from 708 to 676 page faults
//! (the pages the relocations write are the same). glibc reads DT_RELR
//! since 2.36 (the binary then asks for `GLIBC_ABI_DT_RELR`, so an older
//! glibc says so at start instead of misbehaving); GNU ld takes the option
//! since 2.38 and lld since 15. Where the linker does not know it, GNU ld
//! warns and links as before.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
