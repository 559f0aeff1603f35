//! Just enough ELF to tell a static executable from a dynamic one and to name
//! a dynamic one's interpreter (its `PT_INTERP`): the recipe needs a static
//! busybox, and the injected tools start each dynamic program through the
//! loader berth ships beside it.

/// What a file is, as far as starting it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ElfKind {
    /// Not a 64-bit little-endian ELF file (a script, data).
    NotElf,
    /// An ELF file without an interpreter: it runs anywhere.
    Static,
    /// An ELF file the kernel starts through this interpreter (`ld.so`).
    Dynamic { interpreter: String },
}

/// Reads the ELF header and program headers of `bytes`. `Err` names what is
/// truncated or malformed in a file that starts like ELF64.
pub(crate) fn classify(bytes: &[u8]) -> Result<ElfKind, &'static str> {
    // ELF64, little-endian: the only kind berth targets (x86_64, arm64).
    if bytes.get(0..6) != Some(b"\x7fELF\x02\x01") {
        return Ok(ElfKind::NotElf);
    }
    let u16_at = |o: usize| {
        bytes
            .get(o..o.checked_add(2)?)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u32_at = |o: usize| {
        bytes
            .get(o..o.checked_add(4)?)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |o: usize| {
        bytes
            .get(o..o.checked_add(8)?)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_le_bytes)
    };
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38))
    else {
        return Err("truncated ELF header");
    };
    let phoff = usize::try_from(phoff).map_err(|_| "program headers out of range")?;
    for i in 0..usize::from(phnum) {
        let at = phoff
            .checked_add(i * usize::from(phentsize))
            .ok_or("program headers out of range")?;
        match u32_at(at) {
            // PT_INTERP: p_offset at +8, p_filesz at +32.
            Some(3) => {
                let (Some(offset), Some(size)) = (u64_at(at + 8), u64_at(at + 32)) else {
                    return Err("truncated program headers");
                };
                let start = usize::try_from(offset).map_err(|_| "interpreter out of range")?;
                let len = usize::try_from(size).map_err(|_| "interpreter out of range")?;
                let raw = bytes
                    .get(start..start.checked_add(len).ok_or("interpreter out of range")?)
                    .ok_or("truncated interpreter")?;
                let name = raw.split(|&b| b == 0).next().unwrap_or_default();
                let interpreter = String::from_utf8(name.to_vec())
                    .map_err(|_| "the interpreter path is not UTF-8")?;
                if !interpreter.starts_with('/') {
                    return Err("the interpreter path is not absolute");
                }
                return Ok(ElfKind::Dynamic { interpreter });
            }
            Some(_) => {}
            None => return Err("truncated program headers"),
        }
    }
    Ok(ElfKind::Static)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn host_programs_are_told_apart() {
        let busybox = std::fs::read("/usr/bin/busybox").unwrap();
        assert_eq!(classify(&busybox), Ok(ElfKind::Static));
        let env = std::fs::read("/usr/bin/env").unwrap();
        match classify(&env).unwrap() {
            ElfKind::Dynamic { interpreter } => {
                assert!(interpreter.contains("ld-linux"), "{interpreter}")
            }
            other => panic!("/usr/bin/env: {other:?}"),
        }
        assert_eq!(classify(b"#!/bin/sh\necho\n"), Ok(ElfKind::NotElf));
        assert!(classify(&env[..0x30]).is_err());
    }
}
