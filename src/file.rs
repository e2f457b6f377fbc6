//! Writing a file so that a failure leaves the old one whole.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path`. A regular file (or none yet) is replaced only once they are all on
/// disk: they go to a new file beside it, which takes the old one's permissions, is synced and is
/// then renamed over it. So a write that fails partway (a full disk, a file-size limit, a crash)
/// leaves the file that was there as it was, where writing in place would have cut it short.
///
/// As writing in place would: a read-only file is refused, untouched; a device, a pipe or a
/// terminal is written to; a symbolic link's target is written (created, if the link dangles);
/// and a file whose directory takes no new one (read-only, or a name too long for the staging
/// suffix), or that only its owner may replace (another user's, in a sticky directory such as
/// `/tmp`), is written in place, where a failure partway can cut it short. Unlike it, a file
/// with other hard links gets a new inode (the other names keep the old contents), and its owner
/// is the writer. A save killed partway leaves its hidden `.name.<pid>.<n>.partial` file beside
/// the target.
pub(crate) fn write_replacing(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let target = match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => match fs::canonicalize(path) {
            Ok(target) => target,
            Err(_) => return fs::write(path, bytes),
        },
        _ => path.to_path_buf(),
    };
    let permissions = match fs::metadata(&target) {
        Ok(meta) if !meta.is_file() => return fs::write(path, bytes),
        Ok(meta) => {
            // Only to be refused where writing in place would be; nothing is truncated.
            OpenOptions::new().write(true).open(&target)?;
            Some(meta.permissions())
        }
        Err(_) => None,
    };
    let (staged, mut file) = match stage(&target, permissions.as_ref()) {
        Ok(staged) => staged,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::PermissionDenied
                    | io::ErrorKind::ReadOnlyFilesystem
                    | io::ErrorKind::InvalidFilename
            ) =>
        {
            return fs::write(path, bytes);
        }
        Err(e) => return Err(e),
    };
    let whole = (|| {
        file.write_all(bytes)?;
        if let Some(permissions) = permissions {
            file.set_permissions(permissions)?;
        }
        file.sync_all()
    })();
    drop(file);
    let failure = match whole {
        Ok(()) => match fs::rename(&staged, &target) {
            Ok(()) => return Ok(()),
            // In a sticky directory (such as `/tmp`) only a file's owner may replace it, where
            // others may still write it in place.
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => None,
            Err(e) => Some(e),
        },
        Err(e) => Some(e),
    };
    let _ = fs::remove_file(&staged);
    match failure {
        Some(e) => Err(e),
        None => fs::write(path, bytes),
    }
}

/// A new file beside `target`, hidden, named with this process's id and a count; a name that is
/// taken (left by a save that was killed, or made by a process of the same id elsewhere, as in
/// another container) is passed over for the next.
fn stage(target: &Path, permissions: Option<&fs::Permissions>) -> io::Result<(PathBuf, File)> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let Some(name) = target.file_name() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path names no file",
        ));
    };
    for _ in 0..64 {
        let mut staged = std::ffi::OsString::from(".");
        staged.push(name);
        let count = WRITES.fetch_add(1, Ordering::Relaxed);
        staged.push(format!(".{}.{count}.partial", std::process::id()));
        let staged = target.with_file_name(staged);
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        // Created with the old file's mode (less the umask), so it is never readable by more
        // users than the old one while its bytes are written; the exact mode is set after.
        #[cfg(unix)]
        if let Some(permissions) = permissions {
            use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
            options.mode(permissions.mode() & 0o7777);
        }
        #[cfg(not(unix))]
        let _ = permissions;
        match options.open(&staged) {
            Ok(file) => return Ok((staged, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "64 staging names beside the file were taken",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("teenygrad-file-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn replaces_the_file_and_leaves_nothing_beside_it() {
        let dir = scratch_dir("replace");
        let path = dir.join("w.bin");
        write_replacing(&path, b"old").unwrap();
        write_replacing(&path, b"new contents").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new contents");
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["w.bin"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_leaves_nothing() {
        let dir = scratch_dir("fail");
        let path = dir.join("w.bin");
        write_replacing(&path, b"good").unwrap();
        // A directory is no file to write (the failure after staging, a full disk or a size
        // limit, is `tests/hardening_writes.rs`'s).
        let blocked = dir.join("sub");
        fs::create_dir(&blocked).unwrap();
        fs::write(blocked.join("inside"), b"x").unwrap();
        assert!(write_replacing(&blocked, b"data").is_err());
        assert_eq!(fs::read(&path).unwrap(), b"good");
        let mut names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["sub", "w.bin"]);
        assert!(write_replacing(Path::new("/"), b"x").is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A device is written to, not replaced (a save to `/dev/null` as root must leave it a
    /// device), and a dangling link creates its target, as writing in place does.
    #[cfg(unix)]
    #[test]
    fn devices_are_written_to_and_dangling_links_create_their_target() {
        use std::os::unix::fs::FileTypeExt;
        write_replacing(Path::new("/dev/null"), b"x").unwrap();
        assert!(fs::metadata("/dev/null").unwrap().file_type().is_char_device());
        let dir = scratch_dir("dangling");
        let (target, link) = (dir.join("made.bin"), dir.join("link.bin"));
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_replacing(&link, b"new").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new");
        fs::remove_dir_all(&dir).unwrap();
    }

    /// The new file takes the old one's permissions (a private file stays private), and a
    /// read-only one is refused and left as it was (unless the writer may write it anyway, as
    /// root may).
    #[cfg(unix)]
    #[test]
    fn permissions_are_kept_and_a_read_only_file_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch_dir("modes");
        let path = dir.join("w.bin");
        fs::write(&path, b"old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        write_replacing(&path, b"new").unwrap();
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
        if OpenOptions::new().write(true).open(&path).is_err() {
            let e = write_replacing(&path, b"newer").unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
            assert_eq!(fs::read(&path).unwrap(), b"new");
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A name too long for the staging suffix is written in place.
    #[test]
    fn a_name_too_long_to_stage_is_written_in_place() {
        let dir = scratch_dir("long");
        let path = dir.join("n".repeat(250));
        write_replacing(&path, b"old").unwrap();
        write_replacing(&path, b"new").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_keeps_pointing_at_its_replaced_target() {
        let dir = scratch_dir("link");
        let (target, link) = (dir.join("real.bin"), dir.join("link.bin"));
        fs::write(&target, b"old").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_replacing(&link, b"new").unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(fs::read(&target).unwrap(), b"new");
        fs::remove_dir_all(&dir).unwrap();
    }
}
