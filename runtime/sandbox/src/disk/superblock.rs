//! The fields of an ext4 superblock that tell one file system from another
//! made the same way — its UUID and its directory hash seed — read, and
//! rewritten in every copy of the superblock (the primary and its backups)
//! with each copy's checksum.
//!
//! A berth's disk is a copy of a template image ([`super::template`]); two
//! berths' disks must not share an identity (a UUID names a file system to
//! `blkid`, `mount UUID=` and the kernel's logs; the hash seed keys the hashed
//! directories, so names crafted to collide on one disk say nothing about
//! another). Changing the UUID touches nothing but the superblocks when the
//! other metadata checksums are seeded apart from it (`metadata_csum_seed`,
//! which the template is given here) or when there are none (no
//! `metadata_csum`). This is done in the process rather than by
//! `tune2fs -U random`: e2fsprogs 1.47's tune2fs cannot set the hash seed,
//! and it runs as a process that fsyncs three times — the cost the template
//! exists to avoid.
//!
//! Offsets are those of `struct ext4_super_block` (`fs/ext4/ext4.h`); a
//! superblock is used only when its magic, its group number and (with
//! `metadata_csum`) its crc32c checksum are right.

/// Where the primary superblock starts, whatever the block size.
pub(crate) const PRIMARY_OFFSET: u64 = 1024;
/// A superblock's length.
pub(crate) const LEN: usize = 1024;

const INODES_COUNT: usize = 0x00;
const BLOCKS_COUNT_LO: usize = 0x04;
const FIRST_DATA_BLOCK: usize = 0x14;
const LOG_BLOCK_SIZE: usize = 0x18;
const BLOCKS_PER_GROUP: usize = 0x20;
const MAGIC: usize = 0x38;
const STATE: usize = 0x3A;
const BLOCK_GROUP_NR: usize = 0x5A;
const FEATURE_COMPAT: usize = 0x5C;
const FEATURE_INCOMPAT: usize = 0x60;
const FEATURE_RO_COMPAT: usize = 0x64;
const UUID: usize = 0x68;
const HASH_SEED: usize = 0xEC;
const BLOCKS_COUNT_HI: usize = 0x150;
const CHECKSUM_TYPE: usize = 0x175;
const CHECKSUM_SEED: usize = 0x270;
const CHECKSUM: usize = 0x3FC;

const EXT4_MAGIC: u16 = 0xEF53;
const STATE_CLEAN: u16 = 0x0001;
const STATE_ERRORS: u16 = 0x0002;
const COMPAT_SPARSE_SUPER2: u32 = 0x0200;
const INCOMPAT_64BIT: u32 = 0x0080;
const INCOMPAT_CSUM_SEED: u32 = 0x2000;
const RO_COMPAT_SPARSE_SUPER: u32 = 0x0001;
const RO_COMPAT_METADATA_CSUM: u32 = 0x0400;
const CHECKSUM_CRC32C: u8 = 1;

/// crc32c as ext4 uses it: seeded with `!0` and not inverted at the end,
/// which is the complement of the catalogue's CRC-32/ISCSI.
fn ext4_crc32c(bytes: &[u8]) -> u32 {
    const CRC32C: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);
    !CRC32C.checksum(bytes)
}

/// Why a superblock cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SuperblockError {
    #[error("no ext4 superblock at byte {offset}")]
    NotExt4 { offset: u64 },
    #[error("the superblock at byte {offset} fails its checksum")]
    Checksum { offset: u64 },
    #[error("the superblock at byte {offset} says it is group {found}'s, not group {want}'s")]
    WrongGroup { offset: u64, found: u16, want: u64 },
    #[error("the file system is not clean (state {state:#x})")]
    NotClean { state: u16 },
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
}

/// A file system's identity, as a berth's disk gets a fresh one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsIdentity {
    pub uuid: [u8; 16],
    pub hash_seed: [u8; 16],
}

impl FsIdentity {
    /// A random UUID (version 4) and a random hash seed (made the same way,
    /// as mke2fs does; never all zeros, which means "no seed" to the kernel).
    pub fn random() -> std::io::Result<Self> {
        Ok(Self {
            uuid: random_uuid()?,
            hash_seed: random_uuid()?,
        })
    }

    /// The UUID as `blkid` prints it.
    pub fn uuid_string(&self) -> String {
        let h: String = self.uuid.iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        )
    }
}

fn random_uuid() -> std::io::Result<[u8; 16]> {
    let mut b = [0u8; 16];
    let mut filled = 0;
    while filled < b.len() {
        // SAFETY: writes at most `len - filled` bytes into `b[filled..]`.
        let n = unsafe { libc::getrandom(b[filled..].as_mut_ptr().cast(), b.len() - filled, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        filled += n.unsigned_abs();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    Ok(b)
}

/// The layout read from the primary superblock: where every copy of the
/// superblock is, and what the file system is made with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    pub block_size: u64,
    pub blocks: u64,
    pub inodes: u64,
    pub metadata_csum: bool,
    pub csum_seed: bool,
    /// `(group, byte offset)` of each superblock, the primary first.
    pub superblocks: Vec<(u64, u64)>,
    pub identity: FsIdentity,
}

fn u16_at(sb: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([sb[at], sb[at + 1]])
}

fn u32_at(sb: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([sb[at], sb[at + 1], sb[at + 2], sb[at + 3]])
}

fn put_u32(sb: &mut [u8], at: usize, v: u32) {
    sb[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Whether group `g` holds a backup superblock under `sparse_super`: 0, 1
/// and the powers of 3, 5 and 7.
fn sparse_group(g: u64) -> bool {
    if g <= 1 {
        return true;
    }
    [3u64, 5, 7].iter().any(|&base| {
        let mut p = base;
        while p < g {
            p = p.saturating_mul(base);
        }
        p == g
    })
}

/// Checks one superblock copy: magic, group number, checksum.
fn check(sb: &[u8], offset: u64, group: u64) -> Result<(), SuperblockError> {
    if sb.len() < LEN || u16_at(sb, MAGIC) != EXT4_MAGIC {
        return Err(SuperblockError::NotExt4 { offset });
    }
    let found = u16_at(sb, BLOCK_GROUP_NR);
    if u64::from(found) != group {
        return Err(SuperblockError::WrongGroup {
            offset,
            found,
            want: group,
        });
    }
    if u32_at(sb, FEATURE_RO_COMPAT) & RO_COMPAT_METADATA_CSUM != 0
        && u32_at(sb, CHECKSUM) != ext4_crc32c(&sb[..CHECKSUM])
    {
        return Err(SuperblockError::Checksum { offset });
    }
    Ok(())
}

/// Reads the layout from the primary superblock (`sb`, the 1024 bytes at
/// [`PRIMARY_OFFSET`]), checking it.
pub(crate) fn layout(sb: &[u8]) -> Result<Layout, SuperblockError> {
    check(sb, PRIMARY_OFFSET, 0)?;
    let state = u16_at(sb, STATE);
    if state & STATE_CLEAN == 0 || state & STATE_ERRORS != 0 {
        return Err(SuperblockError::NotClean { state });
    }
    let compat = u32_at(sb, FEATURE_COMPAT);
    let incompat = u32_at(sb, FEATURE_INCOMPAT);
    let ro_compat = u32_at(sb, FEATURE_RO_COMPAT);
    if compat & COMPAT_SPARSE_SUPER2 != 0 {
        return Err(SuperblockError::Unsupported("sparse_super2"));
    }
    let metadata_csum = ro_compat & RO_COMPAT_METADATA_CSUM != 0;
    if metadata_csum && sb[CHECKSUM_TYPE] != CHECKSUM_CRC32C {
        return Err(SuperblockError::Unsupported(
            "a checksum type other than crc32c",
        ));
    }
    let log = u32_at(sb, LOG_BLOCK_SIZE);
    if log > 6 {
        return Err(SuperblockError::Unsupported("a block size over 64 KiB"));
    }
    let block_size = 1024u64 << log;
    let mut blocks = u64::from(u32_at(sb, BLOCKS_COUNT_LO));
    if incompat & INCOMPAT_64BIT != 0 {
        blocks |= u64::from(u32_at(sb, BLOCKS_COUNT_HI)) << 32;
    }
    let first = u64::from(u32_at(sb, FIRST_DATA_BLOCK));
    let per_group = u64::from(u32_at(sb, BLOCKS_PER_GROUP));
    if per_group == 0 || blocks <= first {
        return Err(SuperblockError::Unsupported(
            "an empty block group geometry",
        ));
    }
    let groups = (blocks - first).div_ceil(per_group);
    let sparse = ro_compat & RO_COMPAT_SPARSE_SUPER != 0;
    let superblocks = (0..groups)
        .filter(|&g| !sparse || sparse_group(g))
        .map(|g| {
            let offset = if g == 0 {
                PRIMARY_OFFSET
            } else {
                (first + g * per_group) * block_size
            };
            (g, offset)
        })
        .collect();
    let mut identity = FsIdentity {
        uuid: [0; 16],
        hash_seed: [0; 16],
    };
    identity.uuid.copy_from_slice(&sb[UUID..UUID + 16]);
    identity
        .hash_seed
        .copy_from_slice(&sb[HASH_SEED..HASH_SEED + 16]);
    Ok(Layout {
        block_size,
        blocks,
        inodes: u64::from(u32_at(sb, INODES_COUNT)),
        metadata_csum,
        csum_seed: incompat & INCOMPAT_CSUM_SEED != 0,
        superblocks,
        identity,
    })
}

fn seal(sb: &mut [u8]) {
    if u32_at(sb, FEATURE_RO_COMPAT) & RO_COMPAT_METADATA_CSUM != 0 {
        let sum = ext4_crc32c(&sb[..CHECKSUM]);
        put_u32(sb, CHECKSUM, sum);
    }
}

/// Makes the metadata checksums independent of the UUID in one superblock
/// copy (`tune2fs -O metadata_csum_seed`): the seed they were computed
/// with, the crc32c of the UUID, is stored and the feature set. Nothing
/// else changes: every other checksum stays right.
pub(crate) fn pin_checksum_seed(
    sb: &mut [u8],
    offset: u64,
    group: u64,
) -> Result<(), SuperblockError> {
    check(sb, offset, group)?;
    if u32_at(sb, FEATURE_RO_COMPAT) & RO_COMPAT_METADATA_CSUM == 0
        || u32_at(sb, FEATURE_INCOMPAT) & INCOMPAT_CSUM_SEED != 0
    {
        return Ok(());
    }
    let seed = ext4_crc32c(&sb[UUID..UUID + 16]);
    put_u32(sb, CHECKSUM_SEED, seed);
    let incompat = u32_at(sb, FEATURE_INCOMPAT) | INCOMPAT_CSUM_SEED;
    put_u32(sb, FEATURE_INCOMPAT, incompat);
    seal(sb);
    Ok(())
}

/// Gives one superblock copy `identity`, refusing one whose other checksums
/// would then be wrong (`metadata_csum` without `metadata_csum_seed`).
pub(crate) fn set_identity(
    sb: &mut [u8],
    offset: u64,
    group: u64,
    identity: &FsIdentity,
) -> Result<(), SuperblockError> {
    check(sb, offset, group)?;
    if u32_at(sb, FEATURE_RO_COMPAT) & RO_COMPAT_METADATA_CSUM != 0
        && u32_at(sb, FEATURE_INCOMPAT) & INCOMPAT_CSUM_SEED == 0
    {
        return Err(SuperblockError::Unsupported(
            "metadata_csum without metadata_csum_seed (the checksums follow the UUID)",
        ));
    }
    sb[UUID..UUID + 16].copy_from_slice(&identity.uuid);
    sb[HASH_SEED..HASH_SEED + 16].copy_from_slice(&identity.hash_seed);
    seal(sb);
    Ok(())
}

/// The identity in a primary superblock.
pub(crate) fn identity_of(sb: &[u8]) -> Result<FsIdentity, SuperblockError> {
    check(sb, PRIMARY_OFFSET, 0)?;
    let mut id = FsIdentity {
        uuid: [0; 16],
        hash_seed: [0; 16],
    };
    id.uuid.copy_from_slice(&sb[UUID..UUID + 16]);
    id.hash_seed.copy_from_slice(&sb[HASH_SEED..HASH_SEED + 16]);
    Ok(id)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn backup_groups_are_0_1_and_powers_of_3_5_7() {
        let got: Vec<u64> = (0..100).filter(|&g| sparse_group(g)).collect();
        assert_eq!(got, [0, 1, 3, 5, 7, 9, 25, 27, 49, 81]);
    }

    #[test]
    fn crc32c_is_ext4s() {
        // ext4's crc32c(~0, "123456789") without the final inversion:
        // the complement of the standard check value 0xe3069283.
        assert_eq!(ext4_crc32c(b"123456789"), !0xe306_9283);
    }

    fn superblock(group: u16, ro_compat: u32, incompat: u32) -> Vec<u8> {
        let mut sb = vec![0u8; LEN];
        sb[MAGIC..MAGIC + 2].copy_from_slice(&EXT4_MAGIC.to_le_bytes());
        sb[STATE..STATE + 2].copy_from_slice(&STATE_CLEAN.to_le_bytes());
        sb[BLOCK_GROUP_NR..BLOCK_GROUP_NR + 2].copy_from_slice(&group.to_le_bytes());
        put_u32(&mut sb, FEATURE_RO_COMPAT, ro_compat);
        put_u32(&mut sb, FEATURE_INCOMPAT, incompat);
        put_u32(&mut sb, BLOCKS_COUNT_LO, 2048);
        put_u32(&mut sb, BLOCKS_PER_GROUP, 8192);
        put_u32(&mut sb, FIRST_DATA_BLOCK, 1);
        sb[CHECKSUM_TYPE] = CHECKSUM_CRC32C;
        sb[UUID..UUID + 16].copy_from_slice(&[7; 16]);
        seal(&mut sb);
        sb
    }

    #[test]
    fn an_identity_needs_the_checksum_seed_when_checksums_are_on() {
        let id = FsIdentity::random().unwrap();
        let mut sb = superblock(0, RO_COMPAT_METADATA_CSUM, 0);
        assert!(matches!(
            set_identity(&mut sb, PRIMARY_OFFSET, 0, &id),
            Err(SuperblockError::Unsupported(_))
        ));
        pin_checksum_seed(&mut sb, PRIMARY_OFFSET, 0).unwrap();
        assert_eq!(u32_at(&sb, CHECKSUM_SEED), ext4_crc32c(&[7; 16]));
        set_identity(&mut sb, PRIMARY_OFFSET, 0, &id).unwrap();
        assert_eq!(identity_of(&sb).unwrap(), id);
        // The seed stays the template's: the other checksums hold.
        assert_eq!(u32_at(&sb, CHECKSUM_SEED), ext4_crc32c(&[7; 16]));
        // Without checksums there is nothing to pin.
        let mut plain = superblock(0, 0, 0);
        set_identity(&mut plain, PRIMARY_OFFSET, 0, &id).unwrap();
    }

    #[test]
    fn a_damaged_or_misplaced_superblock_is_refused() {
        let id = FsIdentity::random().unwrap();
        let mut sb = superblock(3, RO_COMPAT_METADATA_CSUM, INCOMPAT_CSUM_SEED);
        assert_eq!(
            set_identity(&mut sb, 99, 1, &id),
            Err(SuperblockError::WrongGroup {
                offset: 99,
                found: 3,
                want: 1
            })
        );
        sb[0x200] ^= 1;
        assert_eq!(
            set_identity(&mut sb, 99, 3, &id),
            Err(SuperblockError::Checksum { offset: 99 })
        );
        assert_eq!(
            identity_of(&[0u8; LEN]),
            Err(SuperblockError::NotExt4 {
                offset: PRIMARY_OFFSET
            })
        );
    }

    #[test]
    fn random_identities_are_version_4_and_differ() {
        let a = FsIdentity::random().unwrap();
        let b = FsIdentity::random().unwrap();
        assert_ne!(a, b);
        let s = a.uuid_string();
        assert_eq!(s.len(), 36);
        assert_eq!(&s[14..15], "4");
        assert_ne!(a.hash_seed, [0; 16]);
    }
}
